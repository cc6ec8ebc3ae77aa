"""Sorting along an axis: ``sort`` (values and indices) and ``topk`` (the k largest or smallest;
also the server's classification post-processing, ``postprocess: [{"op": "topk"}]``).

Order follows PyTorch: NaN is larger than every number (last ascending, first descending),
``-0.0`` equals ``+0.0``, and equal elements keep their original order (a stable sort, in both
directions). PyTorch's ``stable=False`` and ``topk`` leave the order of equal elements
unspecified; this stable order is one of the orders PyTorch may give. Indices are i64. A rank-0
tensor is one element (index 0).
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import normalize_axis


def _axis(axis: int, rank: int) -> int:
    if rank == 0:
        if axis not in (0, -1):
            raise ShapeError(f"axis {axis} is out of range for a rank-0 tensor (use 0 or -1)")
        return 0
    return normalize_axis(axis, rank)


def stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices that sort ``x`` along ``axis`` stably (NaN largest), ascending or descending.

    Descending: a stable ascending sort of the reversed axis, mapped back and reversed, keeps
    equal elements in their original order.
    """
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.flip(x, axis=axis)
    order = np.argsort(flipped, axis=axis, kind="stable")
    return np.flip(n - 1 - order, axis=axis)


def _sort_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    _axis(attrs["axis"], x.rank)
    return (TensorType(x.shape, x.dtype), TensorType(x.shape, DType.i64))


def _sort(x: np.ndarray, *, axis: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of x sorted along axis."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.int64)
    ax = _axis(axis, x.ndim)
    order = stable_order(x, ax, descending).astype(np.int64)
    return np.take_along_axis(x, order, axis=ax), order


register(
    OpDef(
        name="sort",
        inputs=("x",),
        attrs=(
            Attr("axis", "int", -1, "the axis to sort along"),
            Attr("descending", "bool", False, "largest first"),
        ),
        infer=_sort_infer,
        reference=_sort,
        doc="(values, indices) with values = x sorted along axis and x[indices] = values; "
        "NaN sorts above +inf, equal elements keep their order (stable)",
        category="sorting",
        dtypes=ALL_DTYPES,
        num_outputs=2,
    )
)


def _topk_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    ax = _axis(attrs["axis"], x.rank)
    k = attrs["k"]
    size = x.shape[ax] if x.rank else 1
    if isinstance(size, str):
        raise ShapeError(f"topk along symbolic dim '{size}' is not supported; make it static")
    if not 0 <= k <= size:
        raise ShapeError(f"topk: k = {k} is out of range for a dim of size {size}")
    shape = tuple(k if i == ax else d for i, d in enumerate(x.shape))
    return (TensorType(shape, x.dtype), TensorType(shape, DType.i64))


def _topk(x: np.ndarray, *, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (or smallest) of x along axis, sorted, with their indices."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.int64)
    ax = _axis(axis, x.ndim)
    order = np.take(stable_order(x, ax, largest), np.arange(k), axis=ax).astype(np.int64)
    return np.take_along_axis(x, order, axis=ax), order


register(
    OpDef(
        name="topk",
        inputs=("x",),
        attrs=(
            Attr("k", "int", doc="how many elements to keep"),
            Attr("axis", "int", -1, "the axis to search"),
            Attr("largest", "bool", True, "the k largest (else the k smallest)"),
        ),
        infer=_topk_infer,
        reference=_topk,
        doc="(values, indices): the first k of sort(x, axis, descending=largest), i.e. the k "
        "largest (or smallest) elements in sorted order, NaN counting as the largest",
        category="sorting",
        dtypes=ALL_DTYPES,
        num_outputs=2,
    )
)
