"""The tolerance policy: how close a pack's result must be to the interpreter's.

* Integer, bool and quantized results: **bit-exact**.
* Float results, by op (``DEFAULT_RULES``; ``docs/conformance.md`` has the table):
  ``exact`` — data movement, selection and sign ops (±0 compare equal);
  ``ulp:N`` — ``|got - want| <= N * ulp(want)``, ulp taken in the output dtype, with a floor of
  N * ulp(1) * 2**-8 for results near zero (transcendental results are not exactly rounded);
  ``reduction`` — accumulation error grows with the reduction length K:
  ``|got - want| <= 2 * K * eps * max(1, max|want|) + 1 ulp(want)``.
* In every float rule NaN must be where the interpreter has NaN, and infinities must match
  exactly (sign included).

A pack may loosen a bound only through ``cuvil_conformance_policy``, with a reason the report shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import REGISTRY
from cuvil_ref.plugin.types import ConformancePolicy, Tolerance

EPS = {DType.f32: 2.0**-23, DType.f16: 2.0**-10, DType.bf16: 2.0**-7}
TINY = {DType.f32: 2.0**-126, DType.f16: 2.0**-14, DType.bf16: 2.0**-126}

_EXACT = [
    "neg",
    "abs",
    "relu",
    "relu6",
    "clamp",
    "hardtanh",
    "maximum",
    "minimum",
    "where",
    "cast",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "topk",
    "max_pool2d",
    "adaptive_max_pool2d",
    "reshape",
    "flatten",
    "permute",
    "transpose",
    "squeeze",
    "unsqueeze",
    "expand",
    "slice",
    "pad",
    "concat",
    "split",
    "index_select",
    "gather",
    "embedding",
]
_ULP1 = ["add", "sub", "mul", "div", "sqrt", "leaky_relu"]
_ULP4 = [
    "exp",
    "log",
    "rsqrt",
    "erf",
    "pow",
    "sigmoid",
    "tanh",
    "gelu",
    "silu",
    "hardswish",
    "hardsigmoid",
    "softplus",
    "elu",
    "mish",
]
_REDUCTION = [
    "sum",
    "mean",
    "prod",
    "var",
    "std",
    "softmax",
    "log_softmax",
    "layer_norm",
    "rms_norm",
    "batch_norm",
    "group_norm",
    "matmul",
    "linear",
    "conv2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
]


@dataclass(frozen=True)
class Rule:
    kind: str  # "exact" | "ulp" | "reduction" | "custom"
    ulp: int = 0
    tolerance: Tolerance | None = None  # for "custom" (a pack's declared bound)
    reason: str = ""  # set when a pack loosened the default

    def describe(self) -> str:
        if self.kind == "ulp":
            return f"<= {self.ulp} ulp"
        if self.kind == "reduction":
            return "<= 2*K*eps*max(1,|want|max) + 1 ulp"
        if self.kind == "custom" and self.tolerance is not None:
            t = self.tolerance
            return f"atol={t.atol}, rtol={t.rtol}" + (f", ulp={t.ulp}" if t.ulp else "")
        return "bit-exact"


DEFAULT_RULES: dict[str, Rule] = {}
DEFAULT_RULES.update({op: Rule("exact") for op in _EXACT})
DEFAULT_RULES.update({op: Rule("ulp", 1) for op in _ULP1})
DEFAULT_RULES.update({op: Rule("ulp", 4) for op in _ULP4})
DEFAULT_RULES.update({op: Rule("reduction") for op in _REDUCTION})
# a chain of up to a few elementwise ops: errors of each step add up
DEFAULT_RULES["fused_elementwise"] = Rule("ulp", 8)

_CATEGORY_RULES = {
    "elementwise": Rule("ulp", 4),
    "activation": Rule("ulp", 4),
    "reduction": Rule("reduction"),
    "normalization": Rule("reduction"),
    "linalg": Rule("reduction"),
    "conv": Rule("reduction"),
    "pooling": Rule("reduction"),
    "fused": Rule("reduction"),
    "quantized": Rule("exact"),
}


def default_rule(op: str) -> Rule:
    if op in DEFAULT_RULES:
        return DEFAULT_RULES[op]
    category = REGISTRY.get(op).category if op in REGISTRY else "misc"
    return _CATEGORY_RULES.get(category, Rule("exact"))


def rule_for(op: str, policy: ConformancePolicy | None) -> Rule:
    """The rule for ``op``, loosened by a pack's policy if it declared a reason."""
    base = default_rule(op)
    if policy is not None and op in policy.tolerances:
        tol, reason = policy.tolerances[op]
        if base.kind == "exact" and REGISTRY.get(op).category == "quantized":
            return base  # quantized results stay bit-exact; no pack may loosen them
        return Rule("custom", tolerance=tol, reason=reason)
    return base


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    max_ulp: float
    reason: str = ""


def _ulp(want: np.ndarray, dtype: DType) -> np.ndarray:
    mag = np.maximum(np.abs(want), TINY[dtype])
    return np.exp2(np.floor(np.log2(mag))) * EPS[dtype]


def compare(got: np.ndarray, want: np.ndarray, rule: Rule, reduce_len: int = 1) -> Comparison:
    """Check one output array against the interpreter's."""
    with np.errstate(all="ignore"):
        return _compare(got, want, rule, reduce_len)


def _compare(got: np.ndarray, want: np.ndarray, rule: Rule, reduce_len: int) -> Comparison:
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return Comparison(False, np.inf, np.inf, f"shape {got.shape}, expected {want.shape}")
    if got.dtype != want.dtype:
        return Comparison(False, np.inf, np.inf, f"dtype {got.dtype}, expected {want.dtype}")
    if want.size == 0:
        return Comparison(True, 0.0, 0.0)
    try:
        dtype = DType.from_numpy(want.dtype)
    except ValueError:
        return Comparison(False, np.inf, np.inf, f"unsupported dtype {want.dtype}")
    if not dtype.is_float:
        got, want = got.reshape(want.shape or (1,)), want.reshape(want.shape or (1,))
        diff = got.astype(np.int64) != want.astype(np.int64)
        if diff.any():
            err = float(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))))
            idx = tuple(int(i) for i in np.argwhere(diff)[0])
            return Comparison(
                False,
                err,
                err,
                f"{int(diff.sum())} of {want.size} elements differ (first at {idx}: got "
                f"{got[idx]}, expected {want[idx]}); integer results must be bit-exact",
            )
        return Comparison(True, 0.0, 0.0)
    g = got.astype(np.float64).reshape(want.shape or (1,))
    w = want.astype(np.float64).reshape(want.shape or (1,))
    nan_w, nan_g = np.isnan(w), np.isnan(g)
    if (nan_w != nan_g).any():
        idx = tuple(int(i) for i in np.argwhere(nan_w != nan_g)[0])
        return Comparison(
            False,
            np.inf,
            np.inf,
            f"NaN mismatch at {idx}: got {g[idx]}, expected {w[idx]}",
        )
    inf_w = np.isinf(w)
    if (inf_w != np.isinf(g)).any() or (g[inf_w] != w[inf_w]).any():
        bad = (inf_w != np.isinf(g)) | (inf_w & (g != w))
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return Comparison(
            False, np.inf, np.inf, f"infinity mismatch at {idx}: got {g[idx]}, expected {w[idx]}"
        )
    finite = ~(nan_w | inf_w)
    err = np.abs(g - w)
    err[~finite] = 0.0
    ulps = err / _ulp(w, dtype)
    max_abs = float(err.max()) if err.size else 0.0
    max_ulp = float(ulps.max()) if ulps.size else 0.0
    if rule.kind == "exact":
        bound = np.zeros_like(w)
    elif rule.kind == "ulp":
        bound = rule.ulp * _ulp(w, dtype) + rule.ulp * EPS[dtype] * 2.0**-8
    elif rule.kind == "reduction":
        scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
        bound = 2.0 * reduce_len * EPS[dtype] * scale + _ulp(w, dtype)
    else:
        t = rule.tolerance or Tolerance()
        bound = t.atol + t.rtol * np.abs(w)
        if t.ulp:
            bound = np.maximum(bound, t.ulp * _ulp(w, dtype))
    over = err > bound
    if over.any():
        idx = tuple(int(i) for i in np.argwhere(over)[0])
        return Comparison(
            False,
            max_abs,
            max_ulp,
            f"{int(over.sum())} of {want.size} elements outside the bound ({rule.describe()}); "
            f"first at {idx}: got {g[idx]!r}, expected {w[idx]!r}",
        )
    return Comparison(True, max_abs, max_ulp)
