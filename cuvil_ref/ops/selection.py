"""Selection ops: ``topk`` (the k largest values along an axis and their indices).

Used by classification post-processing (the server's ``postprocess: [{"op": "topk"}]``).
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.elementwise import NUMERIC
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import normalize_axis


def _topk_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    t = types[0]
    if t.rank == 0:
        raise ShapeError("topk needs a tensor of rank >= 1, got a scalar")
    axis = normalize_axis(attrs["axis"], t.rank)
    k = attrs["k"]
    size = t.shape[axis]
    if k < 1 or (isinstance(size, int) and k > size):
        raise ShapeError(
            f"topk: k={k} must be in [1, {size}] (dim {axis} of [{format_shape(t.shape)}])"
        )
    shape = (*t.shape[:axis], k, *t.shape[axis + 1 :])
    return (TensorType(shape, t.dtype), TensorType(shape, DType.i64))


def _topk(x: np.ndarray, *, k: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """values, indices of the k largest along axis, largest first; ties go to the lower index,
    NaN counts as the largest (torch.topk's order)."""
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if k > n:
        raise ShapeError(f"topk: k={k} exceeds dim {ax} of size {n}")
    # A stable ascending sort of the reversed axis, read backwards, is descending with ties in
    # ascending index order (NaN sorts last ascending, so first here).
    rev = np.flip(x, axis=ax)
    order = np.flip(np.argsort(rev, axis=ax, kind="stable"), axis=ax)
    idx = (n - 1 - np.take(order, np.arange(k), axis=ax)).astype(np.int64)
    return np.take_along_axis(x, idx, axis=ax), idx


register(
    OpDef(
        name="topk",
        inputs=("x",),
        infer=_topk_infer,
        reference=_topk,
        doc="(values, indices) = the k largest x along axis, largest first; ties to the lower "
        "index; NaN is the largest; indices are i64",
        attrs=(
            Attr("k", "int", doc="how many values"),
            Attr("axis", "int", -1, "axis to select along"),
        ),
        category="reduction",
        dtypes=NUMERIC,
        num_outputs=2,
        family="select_k",
        tolerance="exact",
        conformance=grid(
            point("axis", k=3, axis=-1, shapes=((3, 10),)),
            point("axis", k=2, axis=1, shapes=((2, 5, 4),)),
            point("axis", k=1, axis=0, shapes=((4, 7),)),
            point("whole_axis", k=6, axis=0, shapes=((6,),)),
            # whole numbers in [-3, 3]: every row has ties, the lower index must come first
            point("tie", k=4, shapes=((3, 8),), values="small"),
            point("tie", k=5, axis=0, shapes=((9, 3),), dtypes="i32", values="small"),
            # one NaN per row: NaN is the largest (first), not skipped
            point("nan_one_operand", k=3, shapes=((4, 6),), values="nan_one:6"),
            point("edge", k=3, shapes=((4, 6),), values="edge"),
        ),
    )
)
