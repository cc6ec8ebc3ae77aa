"""Converters for Core ATen's unary elementwise ops: float math (``sin``, ``exp``, ``log1p``...,
``sigmoid``), rounding (``ceil``, ``round(decimals=)``...), ``abs``/``neg``/``sign``, the
predicates ``isnan``/``isinf``, ``logical_not`` and ``bitwise_not``.

PyTorch's dtype rules, which the IR ops leave to the frontend:

* float math on an integer or bool tensor computes in the default float dtype (``sin(i64)`` is
  f32): the input is cast first;
* rounding an integer tensor returns it unchanged;
* ``neg`` of a u8 tensor wraps (``-x mod 256``), ``abs`` of a u8 tensor is the identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.aten.promotion import as_dtype, float_dtype
from cuvil_ref.frontend.context import Converter
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]

#: unary ops with a float result: integer and bool inputs are promoted to f32 first
FLOAT_UNARY = (
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "erf",
    "reciprocal",
    "sigmoid",
)

#: rounding ops: the identity on integer tensors
ROUNDING = ("ceil", "floor", "trunc")


def _float_unary(op: str) -> Conv:
    def convert(cx: Converter, x: Value) -> Value:
        return cx.op(op, [as_dtype(cx, x, float_dtype(x.type.dtype))])

    convert.__name__ = op
    return convert


def _rounding(op: str) -> Conv:
    def convert(cx: Converter, x: Value) -> Value:
        return x if not x.type.dtype.is_float else cx.op(op, [x])

    convert.__name__ = op
    return convert


def round_(cx: Converter, x: Value, *, decimals: int = 0) -> Value:
    """``aten.round`` and ``aten.round.decimals`` (half to even)."""
    if not x.type.dtype.is_float:
        if decimals:
            raise CaptureError(
                f"round with decimals={decimals} on a {x.type.dtype.value} tensor: PyTorch does "
                "not define it; cast to float first"
            )
        return x
    return cx.op("round", [x], decimals=int(decimals))


def abs_(cx: Converter, x: Value) -> Value:
    if x.type.dtype in (DType.u8, DType.bool):
        return x
    return cx.op("abs", [x])


def neg(cx: Converter, x: Value) -> Value:
    if x.type.dtype == DType.bool:
        raise CaptureError("neg of a bool tensor is not defined (PyTorch refuses it); use ~x")
    if x.type.dtype == DType.u8:  # wraps: 0 - x in u8
        return cx.op("sub", [as_dtype(cx, 0, DType.u8), x])
    return cx.op("neg", [x])


def _dtype_free(op: str) -> Conv:
    """Ops the IR defines for every dtype (``sign``, ``isnan``, ``logical_not``, ...)."""

    def convert(cx: Converter, x: Value) -> Value:
        return cx.op(op, [x])

    convert.__name__ = op
    return convert


def bitwise_not(cx: Converter, x: Value) -> Value:
    if x.type.dtype.is_float:
        raise CaptureError(
            f"bitwise_not of a {x.type.dtype.value} tensor is not defined (PyTorch refuses it); "
            "bitwise ops take integer or bool tensors"
        )
    return cx.op("bitwise_not", [x])


TABLE: dict[str, Conv] = {
    **{f"aten::{op}": _float_unary(op) for op in FLOAT_UNARY},
    **{f"aten::{op}": _rounding(op) for op in ROUNDING},
    "aten::round": round_,
    "aten::abs": abs_,
    "aten::neg": neg,
    **{f"aten::{op}": _dtype_free(op) for op in ("sign", "isnan", "isinf", "logical_not")},
    "aten::bitwise_not": bitwise_not,
}
