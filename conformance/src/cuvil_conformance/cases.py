"""Conformance cases are data: an op, input specs, attributes, and a stable id.

Inputs are not stored; :meth:`Case.materialize` regenerates them from a seed derived from the
case id, so every case is reproducible anywhere. Weights (``const=True``) become graph constants,
as they would in a compiled model; everything else is a runtime input. Expected values always come
from the reference interpreter (see ``runner``), never from the case.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

    ``kind``: ``normal`` (float: 2*N(0,1); int: small ints), ``positive`` (> 0), ``edge`` (±0,
    NaN, ±Inf, subnormals, limits, ties, then random), ``full`` (the dtype's whole range),
    ``index:N`` (integers in [0, N)), ``offsets:N`` (bag offsets into N indices: sorted, in
    [0, N], the first 0), ``bool``, ``unit`` (uniform in [-1, 1]), ``small`` (ints in [-8, 8]).
    """

    shape: tuple[int, ...]
    dtype: str = "f32"
    kind: str = "normal"
    const: bool = False

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
            if kind == "positive":
                flat = np.abs(rng.standard_normal(n)) * 2 + 0.05
            elif kind == "unit":
                flat = rng.uniform(-1, 1, n)
            elif kind == "edge":
                flat = rng.standard_normal(n) * 2
                edges = np.array(_F32_EDGES, dtype=np.float64)
                take = min(n, len(edges))
                flat[:take] = edges[:take]
                if dt == DType.f16:
                    flat[flat == 1e-40] = 1e-7  # f16 subnormal
            else:
                flat = rng.standard_normal(n) * 2
        else:
            info = np.iinfo(dt.numpy)
            if kind in ("full", "edge"):
                flat = rng.integers(info.min, int(info.max) + 1, n)
                if kind == "edge":
                    edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2]
                    take = min(n, len(edges))
                    flat[:take] = edges[:take]
            elif kind == "small":
                flat = rng.integers(max(-8, info.min), 9, n)
            else:
                lo, hi = max(info.min, -50), min(int(info.max), 50)
                flat = rng.integers(lo, hi + 1, n)
        with np.errstate(all="ignore"):
            return np.asarray(flat).astype(dt.numpy).reshape(self.shape)


@dataclass(frozen=True)
class Case:
    """One conformance case. ``id`` is ``<op>/<variant>`` and never changes between runs."""

    op: str
    variant: str
    inputs: tuple[InputSpec, ...]
    attrs: FrozenDict = field(default_factory=FrozenDict)
    tags: frozenset[str] = frozenset()
    reduce_len: int = 1  # elements summed per output, for reduction-scaled float bounds

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
) -> Case:
    """A case whose variant is derived from dtype, shapes and attrs (and an optional label)."""
    shapes = "_".join("x".join(str(d) for d in s.shape) or "scalar" for s in inputs)
    dtype = inputs[0].dtype if inputs else "none"
    attr_text = ",".join(f"{k}={_short(v)}" for k, v in sorted((attrs or {}).items()))
    parts = [dtype, shapes] + ([attr_text] if attr_text else []) + ([label] if label else [])
    return Case(
        op, "-".join(parts), tuple(inputs), FrozenDict(attrs or {}), frozenset(tags), reduce_len
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
        out.append(
            c if k == 1 else Case(c.op, f"{c.variant}#{k}", c.inputs, c.attrs, c.tags, c.reduce_len)
        )
    return out
