"""Converters for Core ATen's binary elementwise ops: arithmetic (``add``/``sub`` with ``alpha``,
``mul``, ``div`` with ``rounding_mode``, ``pow``, ``fmod``, ``remainder``, ``atan2``,
``maximum``/``minimum``), comparisons, logical and bitwise ops, ``where`` and ``clamp``.

Every converter follows PyTorch's type promotion (``promotion.result_dtype``): operands --
tensors or Python scalars, in either position -- are cast to the result dtype before the IR op.
True division and ``atan2`` of integers compute in the default float dtype. On bool tensors
``add``/``maximum`` are logical or and ``mul``/``minimum`` logical and, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.aten.promotion import as_dtype, float_dtype, promoted, result_dtype
from cuvil_ref.frontend.context import Converter
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]

#: on bool operands these arithmetic ops are logical ones (torch's definition)
_ON_BOOL = {
    "add": "logical_or",
    "maximum": "logical_or",
    "mul": "logical_and",
    "minimum": "logical_and",
}


def _emit(cx: Converter, op: str, a: Any, b: Any, dtype: DType | None = None) -> Value:
    av, bv = promoted(cx, [a, b], dtype)
    if av.type.dtype == DType.bool:
        if op in _ON_BOOL:
            return cx.op(_ON_BOOL[op], [av, bv])
        raise CaptureError(f"{op} of bool tensors is not defined (PyTorch refuses it)")
    return cx.op(op, [av, bv])


def _python(op: str, a: Any, b: Any) -> Any:
    """Both operands are Python values (size arithmetic): compute in Python."""
    table: dict[str, Callable[[Any, Any], Any]] = {
        "add": lambda x, y: x + y,
        "sub": lambda x, y: x - y,
        "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y,
    }
    if op not in table:
        raise CaptureError(f"{op} of two Python values has no tensor to convert")
    return table[op](a, b)


def _scaled(cx: Converter, other: Any, alpha: Any, dtype: DType) -> Any:
    """``alpha * other`` in the add/sub's result dtype (alpha = 1 is skipped)."""
    if alpha == 1:
        return other
    if isinstance(alpha, float) and not dtype.is_float:
        raise CaptureError(f"alpha={alpha} is a float but the operands are {dtype.value}")
    return _emit(cx, "mul", other, alpha, dtype)


def add(cx: Converter, a: Any, b: Any, *, alpha: Any = 1) -> Any:
    """``aten.add.Tensor(self, other, *, alpha)`` / ``add.Scalar(self, other, alpha)``."""
    if not isinstance(a, Value) and not isinstance(b, Value):
        return _python("add", a, b * alpha)
    dtype = result_dtype(a, b)
    return _emit(cx, "add", a, _scaled(cx, b, alpha, dtype), dtype)


def sub(cx: Converter, a: Any, b: Any, *, alpha: Any = 1) -> Any:
    if not isinstance(a, Value) and not isinstance(b, Value):
        return _python("sub", a, b * alpha)
    dtype = result_dtype(a, b)
    if dtype == DType.bool:
        raise CaptureError("sub of bool tensors is not defined (PyTorch refuses it); use ^ or ~")
    return _emit(cx, "sub", a, _scaled(cx, b, alpha, dtype), dtype)


def rsub(cx: Converter, a: Any, b: Any, *, alpha: Any = 1) -> Any:
    """``aten.rsub(self, other, alpha)`` = other - alpha * self."""
    return sub(cx, b, a, alpha=alpha)


def _binary(op: str) -> Conv:
    def convert(cx: Converter, a: Any, b: Any) -> Any:
        if not isinstance(a, Value) and not isinstance(b, Value):
            return _python(op, a, b)
        return _emit(cx, op, a, b)

    convert.__name__ = op
    return convert


def div(cx: Converter, a: Any, b: Any, *, rounding_mode: str | None = None) -> Any:
    """True division (in float), or ``rounding_mode='trunc'``/``'floor'`` in the operands'
    promoted dtype (integer division for integers)."""
    if not isinstance(a, Value) and not isinstance(b, Value):
        q = a / b
        if rounding_mode is None:
            return q
        return math.floor(q) if rounding_mode == "floor" else math.trunc(q)
    dtype = result_dtype(a, b)
    if rounding_mode is None:
        return _emit(cx, "div", a, b, float_dtype(dtype))
    if rounding_mode not in ("trunc", "floor"):
        raise CaptureError(
            f"div with rounding_mode={rounding_mode!r}: use None, 'trunc' or 'floor'"
        )
    if dtype == DType.bool:
        raise CaptureError(
            f"div with rounding_mode={rounding_mode!r} on bool tensors is not defined "
            "(PyTorch refuses it)"
        )
    return _emit(cx, f"{rounding_mode}_divide", a, b, dtype)


def atan2(cx: Converter, a: Any, b: Any) -> Value:
    return _emit(cx, "atan2", a, b, float_dtype(result_dtype(a, b)))


def pow_(cx: Converter, a: Any, b: Any) -> Any:
    """``pow.Tensor_Tensor``, ``pow.Tensor_Scalar`` and ``pow.Scalar`` (a number raised to a
    tensor): both operands in the promoted dtype, so an int tensor raised to an int stays an
    integer power and a float raised to an int tensor is a float power."""
    if not isinstance(a, Value) and not isinstance(b, Value):
        return a**b
    dtype = result_dtype(a, b)
    if dtype == DType.bool:
        raise CaptureError("pow of bool tensors is not defined (PyTorch refuses it)")
    if dtype.is_int and not isinstance(b, Value) and b < 0:
        raise CaptureError(
            f"pow of an integer tensor to the negative power {b} is not defined (PyTorch "
            "refuses it); use a float exponent"
        )
    return _emit(cx, "pow", a, b, dtype)


def _integral_only(op: str) -> Conv:
    def convert(cx: Converter, a: Any, b: Any) -> Any:
        dtype = result_dtype(a, b)
        if dtype.is_float:
            raise CaptureError(
                f"{op} of {dtype.value} operands is not defined (PyTorch refuses it); bitwise "
                "ops take integer or bool tensors"
            )
        return cx.op(op, promoted(cx, [a, b], dtype))

    convert.__name__ = op
    return convert


def _compare(op: str) -> Conv:
    """Comparisons compare in the promoted dtype (``i64 < 2.5`` compares as floats)."""

    def convert(cx: Converter, a: Any, b: Any) -> Any:
        if not isinstance(a, Value) and not isinstance(b, Value):
            return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b}.get(
                op, a >= b
            )
        return cx.op(op, promoted(cx, [a, b]))

    convert.__name__ = op
    return convert


def _logical(op: str) -> Conv:
    def convert(cx: Converter, a: Any, b: Any) -> Value:
        return cx.op(op, [as_dtype(cx, x, DType.bool) for x in (a, b)])

    convert.__name__ = op
    return convert


def where(cx: Converter, condition: Value, a: Any = None, b: Any = None) -> Value:
    """``where.self`` and its Scalar overloads (``torch.where(mask, 0.5, 2.0)``)."""
    if a is None and b is None:
        raise CaptureError(
            "torch.where(condition) with one argument (nonzero) has a data-dependent shape; "
            "Cuvil supports torch.where(condition, a, b)"
        )
    cond = as_dtype(cx, condition, DType.bool)
    return cx.op("where", [cond, *promoted(cx, [a, b])])


def clamp(cx: Converter, x: Value, min: Any = None, max: Any = None) -> Value:
    """``clamp`` (Scalar bounds) and ``clamp.Tensor``: promoted like ``torch.clamp``, NaN bounds
    give NaN, ``min > max`` gives ``max``."""
    if min is None and max is None:
        raise CaptureError("clamp needs at least one of min and max (PyTorch refuses neither)")
    dtype = result_dtype(x, min, max)
    xv = as_dtype(cx, x, dtype)
    if isinstance(min, Value) or isinstance(max, Value) or dtype == DType.bool:
        out = xv
        if min is not None:
            out = _emit(cx, "maximum", out, min, dtype)
        if max is not None:
            out = _emit(cx, "minimum", out, max, dtype)
        return out
    lo = None if min is None else float(min)
    hi = None if max is None else float(max)
    return cx.op("clamp", [xv], min=lo, max=hi)


def clamp_min(cx: Converter, x: Value, min: Any) -> Value:
    return clamp(cx, x, min, None)


def clamp_max(cx: Converter, x: Value, max: Any) -> Value:
    return clamp(cx, x, None, max)


def hardtanh(cx: Converter, x: Value, min_val: Any = -1.0, max_val: Any = 1.0) -> Value:
    """``aten.hardtanh``: keeps the input dtype; on integer tensors PyTorch truncates the bounds
    toward zero (``hardtanh(i8, -1.7, 2.6)`` clamps to [-1, 2])."""
    if x.type.dtype.is_float:
        return cx.op("hardtanh", [x], min_val=float(min_val), max_val=float(max_val))
    if x.type.dtype == DType.bool:
        raise CaptureError("hardtanh of a bool tensor is not defined (PyTorch refuses it)")
    return cx.op("clamp", [x], min=float(math.trunc(min_val)), max=float(math.trunc(max_val)))


TABLE: dict[str, Conv] = {
    "aten::add": add,
    "aten::sub": sub,
    "aten::rsub": rsub,
    "aten::mul": _binary("mul"),
    "aten::maximum": _binary("maximum"),
    "aten::minimum": _binary("minimum"),
    "aten::fmod": _binary("fmod"),
    "aten::remainder": _binary("remainder"),
    "aten::div": div,
    "aten::atan2": atan2,
    "aten::pow": pow_,
    **{f"aten::{op}": _integral_only(op) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    # ``x & y`` exports as aten.__and__ (not decomposed to bitwise_and): same semantics
    **{f"aten::__{op}__": _integral_only(f"bitwise_{op}") for op in ("and", "or", "xor")},
    **{f"aten::{op}": _compare(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"aten::{op}": _logical(op) for op in ("logical_and", "logical_or", "logical_xor")},
    "aten::where": where,
    "aten::clamp": clamp,
    "aten::clamp_min": clamp_min,
    "aten::clamp_max": clamp_max,
    "aten::hardtanh": hardtanh,
}
