"""Converters for Core ATen ops that map onto Cuvil ops directly: softmax entry points
(``_softmax``, the preserved ``softmax.int``), tensor factories whose sizes are static, and
``native_dropout``.

Each converter takes the ATen schema's arguments in order (tensors already IR Values). The
convolution, pooling, padding, indexing and normalization families live in their own modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend import functional as fn
from cuvil_ref.frontend.context import Converter, SymDim, dtype_from_torch, ir_dim
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _softmax(op: str) -> Conv:
    def convert(cx: Converter, x: Value, dim: int, half_to_float: bool = False) -> Value:
        if half_to_float and x.type.dtype.value != "f32":
            x = cx.op("cast", [x], dtype="f32")
        return cx.op(op, [x], axis=int(dim))

    return convert


def _softmax_int(op: str) -> Conv:
    """The preserved ``aten.softmax.int(self, dim, dtype=None)`` (dtype: cast first)."""

    def convert(cx: Converter, x: Value, dim: int, dtype: Any = None) -> Value:
        if dtype is not None:
            x = fn.cast(cx, x, dtype)
        return cx.op(op, [x], axis=int(dim))

    return convert


def _factory_dtype(dtype: Any, fill: Any) -> Any:
    import torch

    if dtype is not None:
        return dtype
    if isinstance(fill, bool):
        return torch.bool
    if isinstance(fill, int):
        return torch.int64
    return torch.get_default_dtype()


def _np_full(shape: Sequence[int], fill: Any, dtype: Any) -> np.ndarray:
    """``np.full`` with torch's conversion of the fill: an integer outside a narrow integer type
    wraps (``full_like(u8, -9)`` is 247), as torch's scalar conversion does."""
    try:
        return np.full(shape, fill, dtype=dtype)
    except OverflowError:
        return np.full(shape, fill, dtype=np.int64).astype(dtype)


def fill(cx: Converter, x: Value, value: Any) -> Value:
    """``aten.fill.Scalar`` / ``fill.Tensor``: ``x``'s shape and dtype, every element ``value``
    (a 0-d tensor value is cast and broadcast at run time)."""
    if not isinstance(value, Value):
        return full_like(cx, x, value)
    if value.type.dtype != x.type.dtype:
        value = cx.op("cast", [value], dtype=x.type.dtype.value)
    if not x.type.rank:
        return cx.op("reshape", [value], shape=())
    one = cx.op("reshape", [value], shape=(1,) * x.type.rank)
    return cx.op("expand", [one], shape=tuple(x.type.shape))


def full(cx: Converter, size: Sequence[Any], fill_value: Any, **kwargs: Any) -> Value:
    """A constant of static ``size``; a size holding an input's symbolic dim (``batch``) becomes
    a one-element constant expanded to the run-time shape."""
    dtype = dtype_from_torch(_factory_dtype(kwargs.get("dtype"), fill_value))
    if all(not isinstance(d, SymDim) for d in size):
        dims = [int(d) for d in size]
        return cx.constant(_np_full(dims, fill_value, dtype.numpy), "full")
    shape = tuple(ir_dim(d) for d in size)
    one = cx.constant(_np_full((1,) * len(shape), fill_value, dtype.numpy), "full")
    return cx.op("expand", [one], shape=shape)


def full_like(cx: Converter, x: Value, fill_value: Any, **kwargs: Any) -> Value:
    """A tensor of ``x``'s shape filled with ``fill_value`` (symbolic dims are expanded at run
    time from the input's bound sizes)."""
    dtype = dtype_from_torch(kwargs["dtype"]) if kwargs.get("dtype") is not None else x.type.dtype
    shape = x.type.shape
    if all(isinstance(d, int) for d in shape):
        return cx.constant(_np_full(shape, fill_value, dtype.numpy), "full_like")
    one = cx.constant(_np_full((1,) * len(shape), fill_value, dtype.numpy), "full_like")
    return cx.op("expand", [one], shape=tuple(shape))


def arange(cx: Converter, *args: Any, **kwargs: Any) -> Value:
    """``aten.arange`` (``end``), ``.start`` (``start, end``), ``.start_step``. Static bounds
    give a constant (torch computes it); an end that is an input's symbolic dim (``seq``) gives
    the IR ``arange`` op over that symbol."""
    import torch

    bounds = [a for a in args if not isinstance(a, torch.dtype)]
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds[:2], 1)
    if len(bounds) >= 3:
        step = bounds[2]
    start, end, step = kwargs.pop("start", start), kwargs.pop("end", end), kwargs.pop("step", step)
    dtype = kwargs.get("dtype")
    if not any(isinstance(b, SymDim) for b in (start, end, step)):
        kw = {"dtype": dtype} if dtype is not None else {}
        return cx.constant(torch.arange(start, end, step, **kw), "arange")
    if not isinstance(end, SymDim) or end.name is None or start != 0 or step != 1:
        raise CaptureError(
            f"arange({start}, {end}, {step}) over a dynamic size: Cuvil supports arange(n) "
            "where n is an input's dynamic dim; make the other sizes static"
        )
    if dtype is None:
        dtype = torch.int64
    return cx.op("arange", [], size=(end.name,), dtype=dtype_from_torch(dtype).value)


def scalar_tensor(cx: Converter, s: Any, **kwargs: Any) -> Value:
    return full(cx, [], s, **kwargs)


def empty(cx: Converter, size: Sequence[Any], **kwargs: Any) -> Value:
    """``torch.empty``: contents are unspecified in torch; Cuvil gives zeros."""
    return full(cx, size, 0, dtype=kwargs.get("dtype") or _default_float())


def _default_float() -> Any:
    import torch

    return torch.get_default_dtype()


def _filled(cx: Converter, x: Value, value: Any, dtype: Any) -> Value:
    """A tensor of ``x``'s shape (symbolic dims too) filled with ``value``."""
    one = cx.constant(np.full((1,) * len(x.type.shape), value, dtype=dtype), "fill")
    return cx.op("expand", [one], shape=tuple(x.type.shape))


def native_dropout(
    cx: Converter, x: Value, p: float, train: bool | None
) -> tuple[Value, Value | None]:
    """``(output, keep mask)``. Outside training, and with ``p`` 0 or 1, dropout is
    deterministic (``p == 1`` multiplies by zero, so signs and NaN survive as in torch); any
    other ``p`` in training draws random masks."""
    p = float(p)
    if train is False or p == 0.0:
        return x, _filled(cx, x, True, np.bool_) if cx.wants(1) else None
    if p == 1.0:
        zero = cx.constant(np.zeros((), dtype=x.type.dtype.numpy), "zero")
        return cx.op("mul", [x, zero]), _filled(cx, x, False, np.bool_) if cx.wants(1) else None
    raise CaptureError(
        f"dropout with p={p} in training mode is random; call model.eval() before capture"
    )


def sym_numel(cx: Converter, x: Value) -> Any:
    from cuvil_ref.frontend import shape_functional as sf

    return sf.numel(cx, x)


TABLE: dict[str, Conv] = {
    "aten::_softmax": _softmax("softmax"),
    "aten::_log_softmax": _softmax("log_softmax"),
    "aten::softmax": _softmax_int("softmax"),
    "aten::log_softmax": _softmax_int("log_softmax"),
    "aten::full": full,
    "aten::arange": arange,
    "aten::full_like": full_like,
    "aten::fill": fill,
    "aten::scalar_tensor": scalar_tensor,
    "aten::empty": empty,
    "aten::native_dropout": native_dropout,
    "aten::sym_numel": sym_numel,
}
