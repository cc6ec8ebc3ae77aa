"""Hypothesis strategies for one op's attributes, derived from its declaration.

An attribute's value is drawn from what the declaration says about it: its ``choices``, the
values the op's conformance grid uses for it (known to be meaningful), its default, and -- for
the attributes that index the input's dims (``axis``, ``axes``, ``perm``, ``sizes``...) -- values
that fit the current input's rank and shape. Nothing here names an op: the builder validates
every draw with the op's own inference and skips a draw the op rejects.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np

from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import OpDef
from cuvil_ref.ops.registry import REQUIRED, Attr

Draw = Any  # hypothesis' draw function

_DIM_ATTRS = frozenset({"axis", "dim0", "dim1", "start_dim", "end_dim"})


def declared_values(opdef: OpDef, name: str) -> list[Any]:
    """The values the op's grid points give ``name``, in order, without repeats."""
    seen: list[Any] = []
    for p in opdef.conformance.grid:
        if name in p.attrs and p.attrs[name] not in seen:
            seen.append(p.attrs[name])
    return seen


def draw_attrs(draw: Draw, opdef: OpDef, x: TensorType) -> dict[str, Any]:
    """Attributes for ``opdef`` applied to a first input of type ``x`` (declaration order, so
    ``sizes`` can follow the ``axis`` it splits)."""
    attrs: dict[str, Any] = {}
    for a in opdef.attrs:
        value = _draw_one(draw, opdef, a, x, attrs)
        if value is not _SKIP:
            attrs[a.name] = value
    return attrs


_SKIP: Any = object()


def _draw_one(draw: Draw, opdef: OpDef, a: Attr, x: TensorType, so_far: dict[str, Any]) -> Any:
    shape = [int(d) for d in x.shape]
    rank = len(shape)
    if a.choices is not None:
        return draw(st.sampled_from(a.choices))
    known = declared_values(opdef, a.name)
    optional = a.kind.endswith("?")
    if a.name in _DIM_ATTRS and rank:
        if optional and draw(st.booleans()):
            return None
        return draw(st.integers(-rank, rank - 1))
    if a.name == "axes":
        if not rank or draw(st.integers(0, 3)) == 0:
            return None
        picked = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
        return tuple(sorted(picked))
    if a.name == "perm":
        return tuple(draw(st.permutations(list(range(rank)))))
    if a.name == "sizes" and rank:
        size = shape[int(so_far.get("axis", 0)) % rank]
        cuts = sorted(draw(st.lists(st.integers(0, size), max_size=3)))
        edges = [0, *cuts, size]
        return tuple(b - e for e, b in zip(edges, edges[1:]))
    if a.name in ("start", "end") and rank:
        size = shape[int(so_far.get("axis", 0)) % rank]
        if a.name == "end" and draw(st.booleans()):
            return None
        return draw(st.integers(-size - 1, size + 1))
    if a.name == "step":
        return draw(st.integers(1, 3))
    if a.name == "pads" and rank:
        k = draw(st.integers(1, min(rank, 2)))
        return tuple(draw(st.lists(st.integers(-1, 2), min_size=2 * k, max_size=2 * k)))
    if a.name == "shape" and a.kind == "dims":
        return draw(st.sampled_from(_shape_candidates(shape)))
    if a.name == "normalized_shape" and rank:
        k = draw(st.integers(1, min(rank, 2)))
        return tuple(shape[rank - k :])
    if a.name == "output_size" and rank >= 2:
        return (draw(st.integers(1, max(1, shape[-2]))), draw(st.integers(1, max(1, shape[-1]))))
    if a.name in ("num_groups", "groups") and rank >= 2 and shape[1] > 0:
        c = shape[1]
        return draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
    if known:
        pool = known + ([a.default] if a.default is not REQUIRED and a.default not in known else [])
        return draw(st.sampled_from(pool))
    if a.default is not REQUIRED:
        return a.default
    return _generic(draw, a)


def _generic(draw: Draw, a: Attr) -> Any:
    kind = a.kind.rstrip("?")
    if kind == "int":
        return draw(st.integers(0, 3))
    if kind == "float":
        return draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "dtype":
        return draw(st.sampled_from(["f32", "f16", "i32", "i8", "bool"]))
    return _SKIP


def _shape_candidates(shape: list[int]) -> list[tuple[int, ...]]:
    n = int(np.prod(shape)) if shape else 1
    out: list[tuple[int, ...]] = [(-1,), (n,), (1, *shape), (*shape, 1)]
    if len(shape) >= 2:
        out.append((*shape[:-2], shape[-2] * shape[-1]))
        out.append((shape[0], -1))
    if 1 in shape:  # an expand target: stretch the first size-1 dim
        i = shape.index(1)
        out.append((*shape[:i], 3, *shape[i + 1 :]))
    return out
