"""Converters for elementwise torch calls: unary and binary ops with Python-scalar operands,
comparisons, bool (bitwise) ops, clamp, where, masked_fill and dtype casts.

A binary op whose operands are all Python values is computed in Python, because torch code
does arithmetic on sizes (``x.shape[0] // 2``) through the same operators."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter, dtype_from_torch
from cuvil_ref.ir.graph import Value

_PY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
    "maximum": max,
    "minimum": min,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
}


def bool_op(logical: str) -> Callable[..., Any]:
    """``a & b`` / ``a | b`` / ``a ^ b``: logical ops on bool tensors (Cuvil has no bitwise
    integer ops); on Python values, the Python operator."""
    py = {"logical_and": operator.and_, "logical_or": operator.or_, "logical_xor": operator.xor}

    def convert(cx: Converter, a: Any, b: Any) -> Any:
        if not isinstance(a, Value) and not isinstance(b, Value):
            return py[logical](a, b)
        for v in (a, b):
            if isinstance(v, Value) and v.type.dtype.value != "bool":
                raise CaptureError(
                    f"bitwise {logical.split('_')[1]} on a {v.type.dtype.value} tensor is not "
                    "supported; Cuvil supports it on bool tensors (masks) only"
                )
        return binary(cx, logical, a, b)

    return convert


def invert(cx: Converter, a: Any) -> Any:
    """``~mask`` on a bool tensor is logical_not; ``~n`` on a Python int stays Python."""
    if not isinstance(a, Value):
        return ~a
    if a.type.dtype.value != "bool":
        raise CaptureError("bitwise not on a non-bool tensor is not supported; use a bool mask")
    return cx.op("logical_not", [a])


def binary(cx: Converter, op: str, a: Any, b: Any) -> Any:
    """``a op b`` where either side may be a Python scalar (made a 0-d constant of the tensor's
    dtype, as PyTorch does); with no tensor at all the result is computed in Python (sizes)."""
    if not isinstance(a, Value) and not isinstance(b, Value):
        return _PY_BINARY[op](a, b)
    if op == "pow" and isinstance(a, Value) and b in (1, 1.0):
        return a
    av = cx.scalar(a, like=b if isinstance(b, Value) else None)
    bv = cx.scalar(b, like=a if isinstance(a, Value) else None)
    if op == "div" and av.type.dtype.numpy.kind in "iub" and bv.type.dtype.numpy.kind in "iub":
        av, bv = cx.op("cast", [av], dtype="f32"), cx.op("cast", [bv], dtype="f32")
    return cx.op(op, [av, bv])


def add(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    if alpha != 1:
        other = binary(cx, "mul", other, alpha)
    return binary(cx, "add", input, other)


def sub(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    if alpha != 1:
        other = binary(cx, "mul", other, alpha)
    return binary(cx, "sub", input, other)


def rsub(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    return sub(cx, other, input, alpha)


def div(cx: Converter, input: Any, other: Any, rounding_mode: str | None = None) -> Any:
    if rounding_mode is None:
        return binary(cx, "div", input, other)
    if not isinstance(input, Value) and not isinstance(other, Value):
        q = input / other
        return math.floor(q) if rounding_mode == "floor" else math.trunc(q)
    raise CaptureError(
        f"div with rounding_mode={rounding_mode!r} on tensors is not supported by Cuvil; "
        "use true division"
    )


def floordiv(cx: Converter, a: Any, b: Any) -> Any:
    if isinstance(a, Value) or isinstance(b, Value):
        return div(cx, a, b, rounding_mode="floor")
    return a // b


def unary(op: str) -> Callable[..., Value]:
    def convert(cx: Converter, input: Value, *args: Any, **kwargs: Any) -> Value:
        return cx.op(op, [input])

    convert.__name__ = op
    return convert


def neg(cx: Converter, input: Any) -> Any:
    return cx.op("neg", [input]) if isinstance(input, Value) else -input


def clamp(cx: Converter, input: Value, min: Any = None, max: Any = None) -> Value:
    if isinstance(min, Value) or isinstance(max, Value):
        out = input
        if min is not None:
            out = binary(cx, "maximum", out, min)
        if max is not None:
            out = binary(cx, "minimum", out, max)
        return out
    return cx.op(
        "clamp",
        [input],
        min=None if min is None else float(min),
        max=None if max is None else float(max),
    )


def where(cx: Converter, condition: Value, input: Any = None, other: Any = None) -> Value:
    """``torch.where(condition, a, b)``, either branch a tensor or a Python scalar (both may be
    scalars), promoted as torch does; the ATen converter is the one implementation."""
    from cuvil_ref.frontend.aten.arithmetic import where as aten_where

    return aten_where(cx, condition, input, other)


def masked_fill(cx: Converter, input: Value, mask: Value, value: Any) -> Value:
    return cx.op("where", [mask, cx.scalar(value, like=input), input])


def cast(cx: Converter, input: Value, dtype: Any) -> Value:
    target = dtype_from_torch(dtype)
    if target == input.type.dtype:
        return input
    return cx.op("cast", [input], dtype=target.value)


def to(cx: Converter, input: Value, *args: Any, **kwargs: Any) -> Value:
    """``x.to(dtype)``, ``x.to(device, dtype)``, ``x.to(other)``: only the dtype matters."""
    import torch

    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Value):
            return (
                input
                if a.type.dtype == input.type.dtype
                else cx.op("cast", [input], dtype=a.type.dtype.value)
            )
    return input if dtype is None else cast(cx, input, dtype)


def identity(cx: Converter, input: Any, *args: Any, **kwargs: Any) -> Any:
    return input


def binary_op(op: str) -> Callable[..., Any]:
    """A converter ``(cx, input, other) -> input op other`` for one binary op."""

    def convert(cx: Converter, input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        return binary(cx, op, input, other)

    convert.__name__ = op
    return convert
