"""Converters for the Core ATen normalization ops, which return statistics beside the output:
``native_layer_norm`` and ``native_group_norm`` give ``(out, mean, rstd)``, the batch norms
``(out, save_mean, save_invstd)`` (and the functional form the updated running statistics).

The output is one ``layer_norm`` / ``group_norm`` / ``batch_norm`` op, so packs and the optimizer
see the layer whole. The statistics are computed (``mean``, ``var`` with correction 0, ``rsqrt``)
only when the graph reads them (``Converter.wants``).

Batch norm in training mode normalizes with the batch's own statistics, as torch does -- a
deterministic function of the input; the running statistics it would update are buffers, which
a compiled inference graph does not mutate (the functional form's updated statistics are still
returned when read).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend import functional as fn
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import rank
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _rstd(cx: Converter, var: Value, eps: float) -> Value:
    eps_ = cx.constant(np.asarray(eps, dtype=var.type.dtype.numpy), "eps")
    return cx.op("rsqrt", [cx.op("add", [var, eps_])])


def _stats(
    cx: Converter, x: Value, axes: tuple[int, ...], eps: float
) -> tuple[Value | None, Value | None]:
    """(mean, rstd) over ``axes`` with kept dims, each only if output 1 / 2 is read."""
    mean = cx.op("mean", [x], axes=axes, keepdim=True) if cx.wants(1) else None
    rstd = None
    if cx.wants(2):
        var = cx.op("var", [x], axes=axes, correction=0, keepdim=True)
        rstd = _rstd(cx, var, eps)
    return mean, rstd


def native_layer_norm(
    cx: Converter,
    x: Value,
    normalized_shape: Sequence[int],
    weight: Value | None,
    bias: Value | None,
    eps: float,
) -> tuple[Value, Value | None, Value | None]:
    out = fn.layer_norm(cx, x, normalized_shape, weight, bias, eps)
    k = len(normalized_shape)
    mean, rstd = _stats(cx, x, tuple(range(rank(x) - k, rank(x))), eps)
    return out, mean, rstd


def native_group_norm(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    n: Any,
    c: Any,
    hw: Any,
    group: int,
    eps: float,
) -> tuple[Value, Value | None, Value | None]:
    out = fn.group_norm(cx, x, int(group), weight, bias, eps)
    if not (cx.wants(1) or cx.wants(2)):
        return out, None, None
    batch = x.type.shape[0]
    grouped = cx.op("reshape", [x], shape=(batch, int(group), -1))
    mean, rstd = _stats(cx, grouped, (2,), eps)
    shape = (batch, int(group))
    return (
        out,
        cx.op("reshape", [mean], shape=shape) if mean is not None else None,
        cx.op("reshape", [rstd], shape=shape) if rstd is not None else None,
    )


def _empty_stats(cx: Converter, x: Value) -> Value:
    """torch's ``save_mean`` / ``save_invstd`` outside training: empty tensors."""
    return cx.constant(np.zeros((0,), dtype=x.type.dtype.numpy), "empty_stat")


def _batch_norm(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value | None,
    running_var: Value | None,
    training: bool,
    momentum: float,
    eps: float,
    functional: bool = False,
    stats: bool = True,
) -> tuple[Value | None, ...]:
    if rank(x) < 2:
        raise CaptureError(f"batch_norm needs an input [N, C, ...], got {x.type}")
    if not training:
        if running_mean is None or running_var is None:
            raise CaptureError("batch_norm outside training needs running_mean and running_var")
        out = fn.batch_norm(cx, x, running_mean, running_var, weight, bias, False, momentum, eps)
        if not stats:
            return (out,)
        empty = (_empty_stats(cx, x), _empty_stats(cx, x))
        rest = (running_mean, running_var) if functional else ()
        return (out, *empty, *rest)
    axes = (0, *range(2, rank(x)))
    mean = cx.op("mean", [x], axes=axes)
    var = cx.op("var", [x], axes=axes, correction=0)
    if weight is None and bias is not None:
        weight = cx.constant(np.ones(bias.type.shape, bias.type.dtype.numpy), "ones")
    out = cx.op("batch_norm", [x, mean, var, weight, bias], eps=float(eps))
    if not stats:
        return (out,)
    results: list[Value | None] = [
        out,
        mean if cx.wants(1) else None,
        _rstd(cx, var, eps) if cx.wants(2) else None,
    ]
    if functional:
        results += [
            _running(cx, running_mean, mean, momentum) if cx.wants(3) else None,
            _running(cx, running_var, _unbiased(cx, x, var, axes), momentum)
            if cx.wants(4)
            else None,
        ]
    return tuple(results)


def _running(cx: Converter, old: Value | None, new: Value, momentum: float) -> Value | None:
    """(1 - momentum) * old + momentum * new: what the running statistic would become."""
    if old is None:
        return None
    dt = new.type.dtype.numpy
    keep = cx.op("mul", [old, cx.constant(np.asarray(1 - momentum, dtype=dt), "momentum")])
    take = cx.op("mul", [new, cx.constant(np.asarray(momentum, dtype=dt), "momentum")])
    return cx.op("add", [keep, take])


def _unbiased(cx: Converter, x: Value, var: Value, axes: tuple[int, ...]) -> Value:
    count = 1
    for a in axes:
        d = x.type.shape[a]
        if not isinstance(d, int):
            raise CaptureError(f"batch_norm running statistics over dynamic dim '{d}'")
        count *= d
    scale = count / max(count - 1, 1)
    return cx.op("mul", [var, cx.constant(np.asarray(scale, dtype=var.type.dtype.numpy), "n")])


def batch_norm_legit(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    *args: Any,
) -> tuple[Value | None, ...]:
    """``_native_batch_norm_legit(x, w, b, running_mean, running_var, training, momentum, eps)``
    and its ``no_stats`` overload ``(x, w, b, training, momentum, eps)``."""
    if len(args) == 3:
        training, momentum, eps = args
        return _batch_norm(cx, x, weight, bias, None, None, training, momentum, eps)
    running_mean, running_var, training, momentum, eps = args
    return _batch_norm(cx, x, weight, bias, running_mean, running_var, training, momentum, eps)


def batch_norm_legit_functional(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value,
    running_var: Value,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Value | None, ...]:
    return _batch_norm(
        cx, x, weight, bias, running_mean, running_var, training, momentum, eps, functional=True
    )


def batch_norm_no_training(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value,
    running_var: Value,
    momentum: float,
    eps: float,
) -> tuple[Value | None, ...]:
    return _batch_norm(cx, x, weight, bias, running_mean, running_var, False, momentum, eps)


def batch_norm(
    cx: Converter,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value | None,
    running_var: Value | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Value | None:
    """The high-level ``aten.batch_norm`` (kept whole when a graph needs no decomposition): one
    output, batch statistics in training mode. The running statistics torch would update in
    training are not outputs of the captured graph, so they are not computed."""
    del cudnn_enabled  # a backend choice, not semantics
    return _batch_norm(
        cx, x, weight, bias, running_mean, running_var, training, momentum, eps, stats=False
    )[0]


TABLE: dict[str, Conv] = {
    "aten::batch_norm": batch_norm,
    "aten::native_layer_norm": native_layer_norm,
    "aten::native_group_norm": native_group_norm,
    "aten::_native_batch_norm_legit": batch_norm_legit,
    "aten::_native_batch_norm_legit_functional": batch_norm_legit_functional,
    "aten::_native_batch_norm_legit_no_training": batch_norm_no_training,
}
