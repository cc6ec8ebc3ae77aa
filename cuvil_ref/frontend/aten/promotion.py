"""PyTorch's type promotion for converters: the dtype ``torch.result_type`` gives for a mix of
tensors (IR Values) and Python scalars, and the operands cast to it.

torch ranks operands in three tiers -- tensors with dims, 0-d tensors, Python scalars -- and a
lower tier only matters when its *category* (bool < integer < float) is higher: ``i32[3] + 2``
stays i32, ``i32[3] + 2.5`` is f32 (the default float dtype), ``f16[3] + f64[]`` stays f16,
``i64[3] + f64[]`` is f64. Within a tier, dtypes promote as ``cuvil_ref.ir.dtypes.promote``.
This is ``c10::ResultTypeState`` (``update_result_type_state`` and ``combine_categories``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter, SymDim
from cuvil_ref.ir.dtypes import DType, promote
from cuvil_ref.ir.graph import Value

#: torch's default float dtype for Python floats and for integer inputs of float ops
DEFAULT_FLOAT = DType.f32


def _category(dtype: DType) -> int:
    return 2 if dtype.is_float else (0 if dtype == DType.bool else 1)


def _scalar_dtype(value: Any) -> DType:
    if isinstance(value, (bool, np.bool_)):
        return DType.bool
    if isinstance(value, (int, np.integer)):
        return DType.i64
    if isinstance(value, (float, np.floating)):
        return DType.f64  # a Python float is double; it counts as the default dtype (below)
    if isinstance(value, SymDim):
        raise CaptureError(f"the dynamic size '{value.expr}' is used as a tensor value")
    raise CaptureError(
        f"a {type(value).__name__} operand ({value!r}) is not supported by Cuvil "
        "(tensors, bools, ints and floats are; complex numbers are not)"
    )


def _fold(acc: DType | None, dtype: DType) -> DType:
    return dtype if acc is None else promote(acc, dtype)


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """``combine_categories``: the lower tier wins only with a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.is_float:
        return higher
    if higher == DType.bool or lower.is_float:
        return promote(higher, lower)
    return higher


def result_dtype(*operands: Any) -> DType:
    """``torch.result_type`` over IR Values and Python scalars (``None`` operands are ignored)."""
    dim: DType | None = None
    zero: DType | None = None
    wrapped: DType | None = None
    for x in operands:
        if x is None:
            continue
        if isinstance(x, Value):
            if len(x.type.shape) == 0:
                zero = _fold(zero, x.type.dtype)
            else:
                dim = _fold(dim, x.type.dtype)
            continue
        dt = _scalar_dtype(x)
        wrapped = _fold(wrapped, DEFAULT_FLOAT if dt.is_float else dt)
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise CaptureError("an elementwise op with no tensor operand cannot be converted")
    return out


def float_dtype(dtype: DType) -> DType:
    """The dtype a float-valued op (``sin``, true ``div``) computes in: ints and bool go to the
    default float dtype, as in PyTorch."""
    return dtype if dtype.is_float else DEFAULT_FLOAT


def as_dtype(cx: Converter, x: Any, dtype: DType) -> Value:
    """``x`` (a Value or a Python scalar) as a Value of ``dtype`` (scalars become 0-d constants;
    an integer scalar wraps into the dtype as torch does)."""
    if isinstance(x, Value):
        return x if x.type.dtype == dtype else cx.op("cast", [x], dtype=dtype.value)
    _scalar_dtype(x)
    with np.errstate(all="ignore"):
        array = np.asarray(x).astype(dtype.numpy)
    return cx.constant(array, "scalar")


def promoted(cx: Converter, operands: Sequence[Any], dtype: DType | None = None) -> list[Value]:
    """All ``operands`` as Values of one dtype (default: their torch result dtype)."""
    target = result_dtype(*operands) if dtype is None else dtype
    return [as_dtype(cx, x, target) for x in operands]


__all__ = ["DEFAULT_FLOAT", "as_dtype", "float_dtype", "promoted", "result_dtype"]
