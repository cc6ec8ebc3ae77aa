"""Conformance cases are data: an op, input specs, attributes, and a stable id.

Inputs are not stored; :meth:`Case.materialize` regenerates them from a seed derived from the
case id, so every case is reproducible anywhere. Weights (``const=True``) become graph constants,
as they would in a compiled model; everything else is a runtime input. Expected values always come
from the reference interpreter (see ``runner``), never from the case.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cuvil_ref.ir import DType, GraphBuilder, TensorType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Graph

_F32_EDGES = [
    0.0,
    -0.0,
    np.nan,
    np.inf,
    -np.inf,
    1e-40,
    -1e-40,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.5,
    -2.5,
    6.0,
    -6.0,
    3.0,
    -3.0,
    1e-3,
    100.0,
    -100.0,
]


@dataclass(frozen=True)
class InputSpec:
    """How to generate one input.

    ``kind``: ``normal`` (float: 2*N(0,1); int: small ints), ``positive`` (> 0), ``unit``
    (uniform in [-1, 1]), ``small`` (whole numbers in [-3, 3] for floats -- every row has ties --
    and [-8, 8] for ints), ``neg`` (negative values only), ``edge`` (±0, NaN, ±Inf, subnormals,
    limits, ties, then ``extra``, then random), ``full`` (the dtype's whole range), ``index:N``
    (integers in [0, N)), ``offsets:N`` (bag offsets into N indices: sorted, in [0, N], the
    first 0), ``bool``, ``nan_one:K[:R]`` (normal values with NaN at every index
    ``i % K == R``, R drawn when absent: other inputs get NaN elsewhere), ``ties:S`` (exact
    halfway points ``(k + 1/2) * S``), ``lowvar:M`` (mean M, standard deviation M/300: variance
    by ``E[x^2] - E[x]^2`` in f32 loses most digits, a two-pass variance does not), ``large:M``
    (uniform in [-M, M]), ``grid:S`` (multiples of S in [-3, 3]: their products and sums are
    exact in f32), ``nonzero`` (normal, integer zeros replaced by 1: integer divisors).
    """

    shape: tuple[int, ...]
    dtype: str = "f32"
    kind: str = "normal"
    const: bool = False
    extra: tuple[float, ...] = ()

    def generate(self, rng: np.random.Generator) -> np.ndarray:
        dt = DType(self.dtype)
        n = int(np.prod(self.shape)) if self.shape else 1
        kind, _, arg = self.kind.partition(":")
        if kind == "bool" or dt == DType.bool:
            flat = rng.random(n) < 0.5
        elif kind == "index":
            flat = rng.integers(0, int(arg), n)
        elif kind == "offsets":
            flat = np.sort(rng.integers(0, int(arg) + 1, n))
            flat[:1] = 0
        elif dt.is_float:
            flat = _float_values(kind, arg, n, rng, self.extra, dt)
        else:
            flat = _int_values(kind, arg, n, rng, dt)
        with np.errstate(all="ignore"):
            return np.asarray(flat).astype(dt.numpy).reshape(self.shape)


def _float_values(
    kind: str, arg: str, n: int, rng: np.random.Generator, extra: tuple[float, ...], dt: DType
) -> np.ndarray:
    if kind == "positive":
        return np.abs(rng.standard_normal(n)) * 2 + 0.05
    if kind == "unit":
        return rng.uniform(-1, 1, n)
    if kind == "small":
        return rng.integers(-3, 4, n).astype(np.float64)
    if kind == "neg":
        return -(np.abs(rng.standard_normal(n)) * 2 + 0.05)
    if kind == "ties":
        return (rng.integers(-20, 20, n) + 0.5) * float(arg)
    if kind == "lowvar":
        mean = float(arg)
        return mean + rng.standard_normal(n) * (mean / 300)
    if kind == "large":
        return rng.uniform(-float(arg), float(arg), n)
    if kind == "grid":
        step = float(arg)
        return rng.integers(-int(3 / step), int(3 / step) + 1, n) * step
    flat = rng.standard_normal(n) * 2
    if kind == "nan_one":
        k, _, r = arg.partition(":")
        period = int(k)
        offset = int(r) if r else int(rng.integers(0, period))
        flat[offset::period] = np.nan
    elif kind == "edge":
        edges = np.array(_F32_EDGES + list(extra), dtype=np.float64)
        take = min(n, len(edges))
        flat[:take] = edges[:take]
        if dt == DType.f16:
            flat[flat == 1e-40] = 1e-7  # f16 subnormal
    return flat


def _int_values(kind: str, arg: str, n: int, rng: np.random.Generator, dt: DType) -> np.ndarray:
    info = np.iinfo(dt.numpy)
    if kind in ("full", "edge"):
        flat = rng.integers(info.min, int(info.max) + 1, n)
        if kind == "edge":
            edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2]
            take = min(n, len(edges))
            flat[:take] = edges[:take]
        return flat
    if kind == "small":
        return rng.integers(max(-8, info.min), 9, n)
    if kind == "neg" and info.min < 0:
        return rng.integers(info.min, 0, n)
    lo, hi = max(info.min, -50), min(int(info.max), 50)
    flat = rng.integers(lo, hi + 1, n)
    if kind == "nonzero":
        flat[flat == 0] = 1
    return flat


@dataclass(frozen=True)
class Case:
    """One conformance case. ``id`` is ``<op>/<variant>`` and never changes between runs."""

    op: str
    variant: str
    inputs: tuple[InputSpec, ...]
    attrs: FrozenDict = field(default_factory=FrozenDict)
    tags: frozenset[str] = frozenset()
    # elements summed per output, for reduction-scaled float bounds; 0 when the inputs make every
    # sum exact (the result is then held to the elementwise part of the bound)
    reduce_len: int = 1
    rule: str = "basic"  # the semantic rule / attribute class the case exercises

    @property
    def id(self) -> str:
        return f"{self.op}/{self.variant}"

    @property
    def dtype(self) -> str:
        return self.inputs[0].dtype if self.inputs else "none"

    def seed(self) -> int:
        return int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:8], "little")

    def materialize(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed())
        return [spec.generate(rng) for spec in self.inputs]

    def build(self) -> tuple[Graph, list[np.ndarray]]:
        """A one-node graph for this case and its runtime inputs."""
        arrays = self.materialize()
        b = GraphBuilder()
        values = []
        runtime: list[np.ndarray] = []
        for i, (spec, arr) in enumerate(zip(self.inputs, arrays)):
            if spec.const:
                values.append(b.constant(f"w{i}", arr))
            else:
                values.append(b.input(f"x{i}", TensorType(arr.shape, DType(spec.dtype))))
                runtime.append(arr)
        outs = b.op_multi(self.op, values, dict(self.attrs))
        return b.build(list(outs)), runtime


def make_case(
    op: str,
    inputs: Sequence[InputSpec],
    attrs: Mapping[str, Any] | None = None,
    *,
    label: str = "",
    tags: Sequence[str] = (),
    reduce_len: int = 1,
    rule: str = "basic",
) -> Case:
    """A case whose variant is derived from dtype, shapes and attrs (and an optional label)."""
    shapes = "_".join("x".join(str(d) for d in s.shape) or "scalar" for s in inputs)
    dtype = inputs[0].dtype if inputs else "none"
    attr_text = ",".join(f"{k}={_short(v)}" for k, v in sorted((attrs or {}).items()))
    parts = [dtype, shapes] + ([attr_text] if attr_text else []) + ([label] if label else [])
    return Case(
        op,
        "-".join(parts),
        tuple(inputs),
        FrozenDict(attrs or {}),
        frozenset(tags) | {rule},
        reduce_len,
        rule,
    )


def _short(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ".".join(_short(x) for x in v) + ")"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def dedupe(cases: Sequence[Case]) -> list[Case]:
    """Keep ids unique: a repeated id gets ``#2``, ``#3``..."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        k = seen.get(c.id, 0) + 1
        seen[c.id] = k
        out.append(c if k == 1 else replace(c, variant=f"{c.variant}#{k}"))
    return out
