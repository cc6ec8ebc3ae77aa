"""The tolerance policy: how close a pack's result must be to the interpreter's.

Each op declares its tolerance class (``OpDef.tolerance``; ``cuvil_ref.ops.families`` lists the
classes and the category defaults); this module turns it into a bound:

* Integer, bool and quantized results: **bit-exact**, whatever the class.
* ``exact`` -- data movement, selection and sign ops (±0 compare equal).
* ``ulp:N`` -- ``|got - want| <= N * ulp(want) + N * ulp(1) * 2**-8``, ulp taken in the output
  dtype (the floor covers results near zero; transcendental results are not correctly rounded).
* ``reduction`` -- accumulation error grows with the number K of terms per output:
  ``|got - want| <= 2 * K * eps * max(1, max|want|) + 1 ulp(want) + ulp(1) * 2**-8``.
* ``reduction+ulp:N`` -- a producer with a fused elementwise epilogue: the reduction bound plus
  the elementwise ``ulp:N`` bound. Cases whose inputs make every sum exact record K = 0, which
  holds the result to the elementwise part alone.
* In every float rule NaN must be where the interpreter has NaN, and infinities must match
  exactly (sign included).

A pack may loosen a bound only through ``cuvil_conformance_policy``, with a reason the report
shows. Error figures (:class:`Metrics`) are NaN-aware: they cover the positions where both
results are finite and count NaN and infinity mismatches separately, so a worst error never
reads 0.0 because a NaN swallowed it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import REGISTRY
from cuvil_ref.ops.families import check_tolerance
from cuvil_ref.plugin.types import ConformancePolicy, Tolerance

EPS = {DType.f64: 2.0**-52, DType.f32: 2.0**-23, DType.f16: 2.0**-10, DType.bf16: 2.0**-7}
TINY = {DType.f64: 2.0**-1022, DType.f32: 2.0**-126, DType.f16: 2.0**-14, DType.bf16: 2.0**-126}


@dataclass(frozen=True)
class Rule:
    """A bound. ``kind``: ``exact`` | ``ulp`` | ``reduction`` | ``custom`` (a pack's own)."""

    kind: str
    ulp: int = 0  # ulp: the N of ulp:N; reduction: the ulp(want) term (1, or N of +ulp:N)
    tolerance: Tolerance | None = None  # for "custom" (a pack's declared bound)
    reason: str = ""  # set when a pack loosened the default

    @staticmethod
    def parse(text: str) -> Rule:
        """The rule of a tolerance class (``exact``, ``ulp:4``, ``reduction+ulp:8``...)."""
        problem = check_tolerance(text)
        if problem:
            raise ValueError(problem)
        if text == "exact":
            return Rule("exact")
        if text == "reduction":
            return Rule("reduction", 1)
        if text.startswith("ulp:"):
            return Rule("ulp", int(text[4:]))
        return Rule("reduction", int(text.split("ulp:")[1]))

    def describe(self) -> str:
        if self.kind == "ulp":
            return f"<= {self.ulp} ulp"
        if self.kind == "reduction":
            return f"<= 2*K*eps*max(1,|want|max) + {self.ulp} ulp"
        if self.kind == "custom" and self.tolerance is not None:
            t = self.tolerance
            return f"atol={t.atol}, rtol={t.rtol}" + (f", ulp={t.ulp}" if t.ulp else "")
        return "bit-exact"


def default_rule(op: str) -> Rule:
    """The rule ``op`` declares (``exact`` for names outside the registry)."""
    return Rule.parse(REGISTRY.get(op).tolerance) if op in REGISTRY else Rule("exact")


def rule_for(op: str, policy: ConformancePolicy | None) -> Rule:
    """The rule for ``op``, loosened by a pack's policy if it declared a reason."""
    base = default_rule(op)
    if policy is not None and op in policy.tolerances:
        tol, reason = policy.tolerances[op]
        if op in REGISTRY and REGISTRY.get(op).category == "quantized":
            return base  # quantized results stay bit-exact; no pack may loosen them
        return Rule("custom", tolerance=tol, reason=reason)
    return base


@dataclass(frozen=True)
class Metrics:
    """Error figures of one comparison, typed for the JSON report.

    ``max_abs_err``/``max_ulp`` cover the ``compared`` positions where both results are finite
    (None when there is none, or for ``max_ulp`` on integer results); NaN and infinity mismatches
    are counted, never folded into the maxima.
    """

    elements: int = 0
    compared: int = 0
    nan_expected: int = 0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    max_abs_err: float | None = None
    max_ulp: float | None = None

    def worst(self, other: Metrics) -> Metrics:
        """The element-wise worst of two outputs' figures."""

        def top(a: float | None, b: float | None) -> float | None:
            return b if a is None else a if b is None else max(a, b)

        return Metrics(
            self.elements + other.elements,
            self.compared + other.compared,
            self.nan_expected + other.nan_expected,
            self.nan_mismatches + other.nan_mismatches,
            self.inf_mismatches + other.inf_mismatches,
            top(self.max_abs_err, other.max_abs_err),
            top(self.max_ulp, other.max_ulp),
        )

    def to_json(self) -> dict[str, int | float | None]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    ok: bool
    metrics: Metrics
    reason: str = ""

    @property
    def max_abs_err(self) -> float | None:
        return self.metrics.max_abs_err

    @property
    def max_ulp(self) -> float | None:
        return self.metrics.max_ulp


def _ulp(want: np.ndarray, dtype: DType) -> np.ndarray:
    mag = np.maximum(np.abs(want), TINY[dtype])
    return np.exp2(np.floor(np.log2(mag))) * EPS[dtype]


def compare(got: np.ndarray, want: np.ndarray, rule: Rule, reduce_len: int = 1) -> Comparison:
    """Check one output array against the interpreter's."""
    with np.errstate(all="ignore"):
        return _compare(np.asarray(got), np.asarray(want), rule, reduce_len)


def _compare(got: np.ndarray, want: np.ndarray, rule: Rule, reduce_len: int) -> Comparison:
    if got.shape != want.shape:
        return Comparison(False, Metrics(want.size), f"shape {got.shape}, expected {want.shape}")
    if got.dtype != want.dtype:
        return Comparison(False, Metrics(want.size), f"dtype {got.dtype}, expected {want.dtype}")
    if want.size == 0:
        return Comparison(True, Metrics())
    try:
        dtype = DType.from_numpy(want.dtype)
    except ValueError:
        return Comparison(False, Metrics(want.size), f"unsupported dtype {want.dtype}")
    shape = want.shape or (1,)
    if not dtype.is_float:
        return _compare_int(got.reshape(shape), want.reshape(shape))
    g = got.astype(np.float64).reshape(shape)
    w = want.astype(np.float64).reshape(shape)
    nan_w, nan_g, inf_w, inf_g = np.isnan(w), np.isnan(g), np.isinf(w), np.isinf(g)
    nan_bad = nan_w != nan_g
    inf_bad = ~nan_bad & (inf_w | inf_g) & (g != w)
    both = ~(nan_w | nan_g | inf_w | inf_g)
    err = np.where(both, np.abs(g - w), 0.0)
    ulps = np.where(both, err / _ulp(np.where(both, w, 1.0), dtype), 0.0)
    n_both = int(both.sum())
    metrics = Metrics(
        want.size,
        n_both,
        int(nan_w.sum()),
        int(nan_bad.sum()),
        int(inf_bad.sum()),
        float(err.max()) if n_both else None,
        float(ulps.max()) if n_both else None,
    )
    if nan_bad.any():
        idx = _first(nan_bad)
        return Comparison(
            False,
            metrics,
            f"NaN mismatch at {int(nan_bad.sum())} of {want.size} elements; first at {idx}: "
            f"got {g[idx]}, expected {w[idx]}",
        )
    if inf_bad.any():
        idx = _first(inf_bad)
        return Comparison(
            False, metrics, f"infinity mismatch at {idx}: got {g[idx]}, expected {w[idx]}"
        )
    bound = _bound(w, both, dtype, rule, reduce_len)
    over = both & (err > bound)
    if over.any():
        idx = _first(over)
        return Comparison(
            False,
            metrics,
            f"{int(over.sum())} of {want.size} elements outside the bound ({rule.describe()}, "
            f"K={reduce_len}); first at {idx}: got {g[idx]!r}, expected {w[idx]!r}",
        )
    return Comparison(True, metrics)


def _bound(w: np.ndarray, finite: np.ndarray, dtype: DType, rule: Rule, k: int) -> np.ndarray:
    ulp = _ulp(np.where(finite, w, 1.0), dtype)
    if rule.kind == "exact":
        return np.zeros_like(w)
    if rule.kind == "ulp":
        return rule.ulp * ulp + rule.ulp * EPS[dtype] * 2.0**-8
    if rule.kind == "reduction":
        scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
        # The ulp term is the elementwise bound (with its floor near zero), so a fused epilogue
        # on exactly-accumulated inputs (K = 0) is held to exactly what the activation alone is.
        return 2.0 * k * EPS[dtype] * scale + rule.ulp * ulp + rule.ulp * EPS[dtype] * 2.0**-8
    t = rule.tolerance or Tolerance()
    bound = t.atol + t.rtol * np.abs(w)
    return np.maximum(bound, t.ulp * ulp) if t.ulp else bound


def _compare_int(got: np.ndarray, want: np.ndarray) -> Comparison:
    diff = got.astype(np.int64) != want.astype(np.int64)
    err = float(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))))
    metrics = Metrics(want.size, want.size, 0, 0, 0, err, None)
    if diff.any():
        idx = _first(diff)
        return Comparison(
            False,
            metrics,
            f"{int(diff.sum())} of {want.size} elements differ (first at {idx}: got "
            f"{got[idx]}, expected {want[idx]}); integer results must be bit-exact",
        )
    return Comparison(True, metrics)


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])
