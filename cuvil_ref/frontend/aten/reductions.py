"""Converters for Core ATen's reductions beyond sum/mean/prod: ``any``/``all``, ``max``/``min``
(whole tensor, along a dim with indices, or elementwise), ``argmax``/``argmin``, ``var``/``std``
with a float ``correction``, ``cumsum``, ``sort`` and ``topk``.

``any``/``all`` compose exactly from existing ops: ``x != 0`` counted with ``sum`` (so an empty
reduction gives False / True as in PyTorch, and NaN counts as true); PyTorch returns u8 for a u8
input, bool otherwise. ``max(x, dim)`` is ``(amax, argmax)``: the first index of the extreme,
and NaN counts as the extreme, both as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.aten.arithmetic import TABLE as ARITHMETIC
from cuvil_ref.frontend.aten.promotion import as_dtype
from cuvil_ref.frontend.context import Converter, dtype_from_torch
from cuvil_ref.frontend.convert_args import dims_arg
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _axes(dim: Any) -> tuple[int, ...] | None:
    axes = dims_arg(dim)
    return axes if axes else None


def _any_all(which: str) -> Conv:
    def convert(cx: Converter, x: Value, dim: Any = None, keepdim: bool = False) -> Value:
        truth = as_dtype(cx, x, DType.bool)
        if which == "all":
            truth = cx.op("logical_not", [truth])
        count = cx.op("sum", [truth], axes=_axes(dim), keepdim=bool(keepdim))
        zero = as_dtype(cx, 0, DType.i64)
        out = cx.op("ne" if which == "any" else "eq", [count, zero])
        return as_dtype(cx, out, DType.u8) if x.type.dtype == DType.u8 else out

    convert.__name__ = which
    return convert


def _indexable(cx: Converter, x: Value) -> Value:
    """argmax/argmin take no bool: u8 has the same order."""
    return as_dtype(cx, x, DType.u8) if x.type.dtype == DType.bool else x


_EXTREMES = {"max": ("amax", "argmax", "maximum"), "min": ("amin", "argmin", "minimum")}


def _extreme(op: str) -> Conv:
    amax, argmax, binary = _EXTREMES[op]

    def convert(cx: Converter, x: Value, dim: Any = None, keepdim: bool = False) -> Any:
        if isinstance(dim, Value):  # max.other: elementwise
            return ARITHMETIC[f"aten::{binary}"](cx, x, dim)
        if dim is None:
            return cx.op(amax, [x], axes=None, keepdim=False)
        values = cx.op(amax, [x], axes=(int(dim),), keepdim=bool(keepdim))
        indices = cx.op(argmax, [_indexable(cx, x)], axis=int(dim), keepdim=bool(keepdim))
        return values, indices

    convert.__name__ = op
    return convert


def _arg(op: str) -> Conv:
    def convert(cx: Converter, x: Value, dim: Any = None, keepdim: bool = False) -> Value:
        axis = None if dim is None else int(dim)
        return cx.op(op, [_indexable(cx, x)], axis=axis, keepdim=bool(keepdim))

    convert.__name__ = op
    return convert


def _var_std(op: str) -> Conv:
    """``var.correction(self, dim=None, *, correction=None, keepdim=False)``,
    ``var.dim(self, dim, unbiased=True, keepdim=False)`` and ``var(self, unbiased=True)``; the
    correction is a float (``correction=1.3`` divides by N - 1.3)."""

    def convert(
        cx: Converter,
        x: Value,
        dim: Any = None,
        unbiased: Any = True,
        keepdim: bool = False,
        *,
        correction: Any = None,
    ) -> Value:
        if isinstance(dim, bool):  # aten.var(self, unbiased)
            dim, unbiased = None, dim
        corr = float(correction) if correction is not None else (1.0 if unbiased else 0.0)
        return cx.op(op, [x], axes=_axes(dim), correction=corr, keepdim=bool(keepdim))

    convert.__name__ = op
    return convert


def cumsum(cx: Converter, x: Value, dim: int, *, dtype: Any = None) -> Value:
    """With ``dtype`` torch casts first and accumulates in that dtype: an integer one wraps at
    its width, which the IR's i64 sums cast back to it give exactly."""
    if dtype is None:
        return cx.op("cumsum", [x], axis=int(dim))
    want = dtype_from_torch(dtype)
    return as_dtype(cx, cx.op("cumsum", [as_dtype(cx, x, want)], axis=int(dim)), want)


def sort(
    cx: Converter,
    x: Value,
    dim: int = -1,
    descending: bool = False,
    *,
    stable: bool | None = None,
) -> tuple[Value, Value]:
    """``sort`` and ``sort.stable``: Cuvil's sort is always stable, one of the orders PyTorch's
    ``stable=False`` may give."""
    values, indices = cx.op_multi("sort", [x], axis=int(dim), descending=bool(descending))
    return values, indices


def topk(
    cx: Converter,
    x: Value,
    k: Any,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
) -> tuple[Value, Value]:
    """``topk``: always sorted (PyTorch's ``sorted=False`` leaves the order unspecified)."""
    if not isinstance(k, int):
        raise CaptureError(f"topk with a dynamic k ('{k}') is not supported; make k static")
    values, indices = cx.op_multi("topk", [x], k=int(k), axis=int(dim), largest=bool(largest))
    return values, indices


TABLE: dict[str, Conv] = {
    "aten::any": _any_all("any"),
    "aten::all": _any_all("all"),
    "aten::max": _extreme("max"),
    "aten::min": _extreme("min"),
    "aten::argmax": _arg("argmax"),
    "aten::argmin": _arg("argmin"),
    "aten::var": _var_std("var"),
    "aten::std": _var_std("std"),
    "aten::cumsum": cumsum,
    "aten::sort": sort,
    "aten::topk": topk,
}
