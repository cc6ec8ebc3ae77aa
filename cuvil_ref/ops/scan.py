"""Cumulative sums along an axis (``cumsum``).

As PyTorch: integer and bool inputs give i64; float inputs keep their dtype and accumulate
sequentially in float64 (PyTorch's CPU accumulator type for float), rounding each partial sum once
to the output dtype. NaN and infinities propagate forward along the axis; integer sums wrap. A
rank-0 tensor is its own cumulative sum.
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


def _axis(axis: int, rank: int) -> int | None:
    if rank == 0:
        if axis not in (0, -1):
            raise ShapeError(f"axis {axis} is out of range for a rank-0 tensor (use 0 or -1)")
        return None
    return normalize_axis(axis, rank)


def _out_dtype(dtype: DType) -> DType:
    return dtype if dtype.is_float else DType.i64


def _cumsum_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    _axis(attrs["axis"], x.rank)
    return (TensorType(x.shape, _out_dtype(x.dtype), x.layout),)


def _cumsum(x: np.ndarray, *, axis: int) -> np.ndarray:
    """y_i = x_0 + ... + x_i along axis."""
    out = _out_dtype(DType.from_numpy(x.dtype))
    ax = _axis(axis, x.ndim)
    if ax is None:
        return x.astype(out.numpy)
    wide = x.astype(np.float64 if out.is_float else np.int64)
    with np.errstate(all="ignore"):
        return np.cumsum(wide, axis=ax).astype(out.numpy)


register(
    OpDef(
        name="cumsum",
        inputs=("x",),
        attrs=(Attr("axis", "int", doc="the axis to accumulate along"),),
        infer=_cumsum_infer,
        reference=_cumsum,
        doc="y_i = sum_{j <= i} x_j along axis; ints and bool give i64 (wrapping), floats "
        "accumulate in f64 and round each partial sum to x's dtype",
        category="reduction",
        dtypes=ALL_DTYPES,
        family="scan",
        conformance=grid(
            point("axis", axis=1, shapes=((2, 3, 4),)),
            point("axis", axis=0, shapes=((7,),)),
            point("axis", axis=-1, shapes=((3, 5),)),
            point("dtype", axis=1, shapes=((3, 6),), dtypes="f16"),
            point("dtype", axis=0, shapes=((5, 3),), dtypes="i32"),
            point("dtype", axis=1, shapes=((3, 6),), dtypes="u8", values="full"),
            point("dtype", axis=1, shapes=((3, 6),), dtypes="bool", values="bool"),
            point("wrap", axis=1, shapes=((3, 40),), dtypes="i64", values="full"),
            point("edge", axis=1, shapes=((4, 6),), values="edge"),
            point("empty", axis=0, shapes=((0, 3),)),
            point("rank0", axis=0, shapes=((),)),
        ),
        torch_twin=lambda torch, x, axis: torch.cumsum(x, dim=axis),
    )
)
