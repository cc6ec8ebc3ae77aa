"""Argument helpers for the torch converters: torch spells one argument many ways (``3`` or
``(3, 3)``, an int or a list of dims, ``view(2, 3)`` or ``view((2, 3))``); these normalize
them and read dims of IR Values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import SymDim
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops.shapes import normalize_axis


def pair(v: Any, n: int = 2) -> tuple[int, ...]:
    """``3 -> (3, 3)``; a 1-sequence is repeated; an n-sequence is kept."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(x) for x in v)
    return tuple(int(v) for _ in range(n))


def dims_arg(dims: Any) -> tuple[int, ...] | None:
    """A dim argument (int, sequence or None) as a tuple or None."""
    if dims is None:
        return None
    if isinstance(dims, (list, tuple)):
        return tuple(int(d) for d in dims)
    return (int(dims),)


def sizes_arg(sizes: Sequence[Any]) -> list[Any]:
    """``view(2, 3)`` and ``view((2, 3))`` both give ``[2, 3]``."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        return list(sizes[0])
    return list(sizes)


def rank(x: Value) -> int:
    return len(x.type.shape)


def dim_of(x: Value, axis: int) -> int | SymDim:
    return SymDim.of(x.type.shape[normalize_axis(axis, rank(x))])


def static_dim(x: Value, axis: int, what: str) -> int:
    d = x.type.shape[normalize_axis(axis, rank(x))]
    if isinstance(d, str):
        raise CaptureError(f"{what} along dynamic dim '{d}' is not supported; make that dim static")
    return d
