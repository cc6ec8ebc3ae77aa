"""Tensor factories whose size is known only at run time.

Factories of static size are folded at capture into constants; ``arange`` over a symbolic size
(``torch.arange(seq_len)`` with a dynamic sequence length) stays an op whose ``size`` attribute
names the symbol, bound when the graph runs.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register


def _arange_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (n,) = attrs["size"]
    if isinstance(n, int) and n < 0:
        raise ShapeError(f"arange: size {n} is negative")
    if DType(attrs["dtype"]) == DType.bool:
        raise ShapeError("arange: dtype bool is not a numeric range")
    return (TensorType((n,), DType(attrs["dtype"])),)


def _arange(*, size: tuple[int], start: float, step: float, dtype: str) -> np.ndarray:
    """``y[i] = start + i * step`` for ``i < size``, computed in float64 (integers exactly) and
    cast to ``dtype``, as torch computes ``arange``."""
    target = DType(dtype).numpy
    i = np.arange(size[0], dtype=np.int64)
    if np.issubdtype(target, np.integer) and float(start).is_integer() and float(step).is_integer():
        return (int(start) + i * int(step)).astype(target)
    return (float(start) + i.astype(np.float64) * float(step)).astype(target)


register(
    OpDef(
        name="arange",
        inputs=(),
        infer=_arange_infer,
        reference=_arange,
        doc="y[i] = start + i * step for 0 <= i < size (size may be a symbol)",
        attrs=(
            Attr("size", "dims", doc="(n,): the length, an int or a symbolic dim name"),
            Attr("start", "float", 0.0),
            Attr("step", "float", 1.0),
            Attr("dtype", "dtype", "i64"),
        ),
        category="factory",
        family="factory",
        tolerance="exact",
        conformance=grid(
            point(size=(7,)),
            point("int_dtype", size=(5,), start=-2.0, step=3.0, dtype="i32"),
            # a float step: the values are start + i * step rounded once (not a running sum)
            point("float_step", size=(6,), start=0.5, step=0.1, dtype="f32"),
            point("empty", size=(0,)),
        ),
    )
)
