"""Converters for torch reductions: sum/prod/mean/amax/amin, argmax/argmin, var/std (with
torch's ``unbiased``/``correction`` spellings), max/min (reduction or elementwise) and
(log_)softmax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import dims_arg
from cuvil_ref.frontend.convert_elementwise import binary, cast
from cuvil_ref.ir.graph import Value


def _reduce(op: str) -> Callable[..., Value]:
    def convert(
        cx: Converter, input: Value, dim: Any = None, keepdim: bool = False, dtype: Any = None
    ) -> Value:
        x = cast(cx, input, dtype) if dtype is not None else input
        if op in ("sum", "mean") and x.type.dtype.numpy.kind in "bu" and dtype is None:
            x = cx.op("cast", [x], dtype="i64")  # torch sums bools and small ints as int64
        axes = dims_arg(dim)
        return cx.op(op, [x], axes=axes if axes else None, keepdim=bool(keepdim))

    convert.__name__ = op
    return convert


sum_ = _reduce("sum")
prod = _reduce("prod")
mean = _reduce("mean")
amax = _reduce("amax")
amin = _reduce("amin")


def argmax(cx: Converter, input: Value, dim: int | None = None, keepdim: bool = False) -> Value:
    return cx.op("argmax", [input], axis=dim, keepdim=bool(keepdim))


def argmin(cx: Converter, input: Value, dim: int | None = None, keepdim: bool = False) -> Value:
    return cx.op("argmin", [input], axis=dim, keepdim=bool(keepdim))


def _var_std(op: str) -> Callable[..., Value]:
    def convert(
        cx: Converter,
        input: Value,
        dim: Any = None,
        unbiased: Any = None,
        keepdim: bool = False,
        *,
        correction: Any = None,
    ) -> Value:
        # the correction is a float (torch.var(x, correction=1.3) divides by N - 1.3)
        if isinstance(unbiased, bool):
            corr = 1.0 if unbiased else 0.0
        elif unbiased is not None and dim is not None and not isinstance(dim, bool):
            corr = 1.0
        else:
            corr = 1.0 if correction is None else float(correction)
        if isinstance(dim, bool):  # x.var(False): the unbiased flag passed positionally
            dim, corr = None, float(dim)
        axes = dims_arg(dim)
        return cx.op(
            op, [input], axes=axes if axes else None, correction=corr, keepdim=bool(keepdim)
        )

    convert.__name__ = op
    return convert


var = _var_std("var")
std = _var_std("std")


def max_(cx: Converter, input: Value, dim: Any = None, keepdim: bool = False) -> Any:
    """``torch.max(x)``, ``torch.max(x, dim)`` (values, indices) and ``torch.max(a, b)``."""
    if isinstance(dim, Value):
        return binary(cx, "maximum", input, dim)
    if dim is None:
        return cx.op("amax", [input], axes=None, keepdim=False)
    return (
        cx.op("amax", [input], axes=(int(dim),), keepdim=bool(keepdim)),
        cx.op("argmax", [input], axis=int(dim), keepdim=bool(keepdim)),
    )


def min_(cx: Converter, input: Value, dim: Any = None, keepdim: bool = False) -> Any:
    if isinstance(dim, Value):
        return binary(cx, "minimum", input, dim)
    if dim is None:
        return cx.op("amin", [input], axes=None, keepdim=False)
    raise CaptureError("torch.min(x, dim) (values and indices) is not supported; use amin")


def softmax(
    cx: Converter,
    input: Value,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: Any = None,
    half_to_float: bool = False,
) -> Value:
    x = cast(cx, input, dtype) if dtype is not None else input
    return cx.op("softmax", [x], axis=-1 if dim is None else int(dim))


def log_softmax(
    cx: Converter,
    input: Value,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: Any = None,
    half_to_float: bool = False,
) -> Value:
    x = cast(cx, input, dtype) if dtype is not None else input
    return cx.op("log_softmax", [x], axis=-1 if dim is None else int(dim))
