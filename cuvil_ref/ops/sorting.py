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
from cuvil_ref.ops.grid import grid, point
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
        family="misc",
        tolerance="exact",
        conformance=grid(
            point("axis", axis=-1, shapes=((3, 8),)),
            point("axis", axis=0, descending=True, shapes=((5, 2, 3),)),
            point("descending", axis=1, descending=True, shapes=((4, 6),)),
            # whole numbers in [-3, 3]: every row has ties, equal elements keep their order
            point("tie", shapes=((3, 8),), values="small"),
            point("tie", descending=True, shapes=((3, 8),), values="small"),
            point("tie", axis=0, descending=True, shapes=((9, 3),), dtypes="i32", values="small"),
            point("tie", descending=True, shapes=((4, 6),), dtypes="bool", values="bool"),
            # NaN sorts above +inf (last ascending, first descending); -0.0 equals +0.0
            point("nan_one_operand", shapes=((4, 6),), values="nan_one:6"),
            point("edge", shapes=((4, 6),), values="edge"),
            point("edge", descending=True, shapes=((4, 6),), values="edge"),
            point("rank0", axis=0, shapes=((),)),
            point("empty", axis=1, shapes=((3, 0),)),
        ),
        torch_twin=lambda torch, x, axis, descending: tuple(
            torch.sort(x, dim=axis, descending=descending, stable=True)
        ),
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
        family="select_k",
        tolerance="exact",
        conformance=grid(
            point("axis", k=3, axis=-1, shapes=((3, 10),)),
            point("axis", k=2, axis=1, shapes=((2, 5, 4),)),
            point("axis", k=1, axis=0, shapes=((4, 7),)),
            point("whole_axis", k=6, axis=0, shapes=((6,),)),
            point("smallest", k=3, largest=False, shapes=((3, 10),)),
            point("k0", k=0, shapes=((3, 4),)),
            # whole numbers in [-3, 3]: every row has ties, the lower index must come first
            point("tie", k=4, shapes=((3, 8),), values="small"),
            point("tie", k=5, axis=0, shapes=((9, 3),), dtypes="i32", values="small"),
            point("tie", k=4, largest=False, shapes=((3, 8),), values="small"),
            # one NaN per row: NaN is the largest (first), not skipped
            point("nan_one_operand", k=3, shapes=((4, 6),), values="nan_one:6"),
            point("nan_one_operand", k=3, largest=False, shapes=((4, 6),), values="nan_one:6"),
            point("edge", k=3, shapes=((4, 6),), values="edge"),
            point("rank0", k=1, axis=0, shapes=((),)),
        ),
    )
)
