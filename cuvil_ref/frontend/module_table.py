"""``MODULE_TABLE``: ``nn.Module`` classes the fx capture keeps as leaves, and their converters.

Each converter takes ``(cx, module, path, *args)``: the module's parameters become constants
named by ``path`` (``features.0.weight``), its hyperparameters attributes. Most entries are
``_simple(functional converter, *module attribute names)``. ``op_table`` merges the torch.ao
quantized modules in and exposes this table beside the function, method and ATen tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend import functional as fn
from cuvil_ref.frontend import shape_functional as sf
from cuvil_ref.frontend.context import Converter
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _w(cx: Converter, path: str, name: str, tensor: Any) -> Value | None:
    if tensor is None:
        return None
    return cx.weight(f"{path}.{name}" if path else name, tensor)


def _linear(cx: Converter, m: nn.Linear, path: str, x: Value) -> Value:
    return fn.linear(cx, x, _w(cx, path, "weight", m.weight), _w(cx, path, "bias", m.bias))


def _conv2d(cx: Converter, m: nn.Conv2d, path: str, x: Value) -> Value:
    if m.padding_mode != "zeros":
        raise CaptureError(
            f"Conv2d padding_mode={m.padding_mode!r} is not supported by Cuvil; use "
            "padding_mode='zeros' (or pad explicitly with F.pad(mode='constant'))"
        )
    return fn.conv2d(
        cx,
        x,
        _w(cx, path, "weight", m.weight),
        _w(cx, path, "bias", m.bias),
        m.stride,
        m.padding,
        m.dilation,
        m.groups,
    )


def _batch_norm(cx: Converter, m: nn.modules.batchnorm._BatchNorm, path: str, x: Value) -> Value:
    if m.running_mean is None:
        raise CaptureError(
            f"{type(m).__name__} '{path}' has track_running_stats=False and always uses batch "
            "statistics; Cuvil needs running statistics (track_running_stats=True)"
        )
    return fn.batch_norm(
        cx,
        x,
        _w(cx, path, "running_mean", m.running_mean),
        _w(cx, path, "running_var", m.running_var),
        _w(cx, path, "weight", m.weight),
        _w(cx, path, "bias", m.bias),
        m.training,
        m.momentum or 0.0,
        m.eps,
    )


def _layer_norm(cx: Converter, m: nn.LayerNorm, path: str, x: Value) -> Value:
    return fn.layer_norm(
        cx,
        x,
        m.normalized_shape,
        _w(cx, path, "weight", m.weight),
        _w(cx, path, "bias", m.bias),
        m.eps,
    )


def _group_norm(cx: Converter, m: nn.GroupNorm, path: str, x: Value) -> Value:
    return fn.group_norm(
        cx, x, m.num_groups, _w(cx, path, "weight", m.weight), _w(cx, path, "bias", m.bias), m.eps
    )


def _embedding(cx: Converter, m: nn.Embedding, path: str, x: Value) -> Value:
    if m.max_norm is not None:
        raise CaptureError("nn.Embedding with max_norm is not supported by Cuvil")
    return sf.embedding(cx, x, _w(cx, path, "weight", m.weight))


def _dropout(cx: Converter, m: nn.Module, path: str, x: Value) -> Value:
    return fn.dropout(cx, x, training=m.training)


def _simple(convert: Conv, *attrs: str) -> Conv:
    """A module converter that calls ``convert(cx, x, *[module.<attr>...])``."""

    def module_convert(cx: Converter, m: nn.Module, path: str, x: Value) -> Any:
        return convert(cx, x, *[getattr(m, a) for a in attrs])

    return module_convert


MODULE_TABLE: dict[type, Conv] = {
    nn.Linear: _linear,
    nn.Conv2d: _conv2d,
    nn.BatchNorm1d: _batch_norm,
    nn.BatchNorm2d: _batch_norm,
    nn.LayerNorm: _layer_norm,
    nn.Embedding: _embedding,
    nn.Dropout: _dropout,
    nn.Dropout2d: _dropout,
    nn.Identity: _simple(fn.identity),
    nn.ReLU: _simple(fn.unary("relu")),
    nn.ReLU6: _simple(fn.unary("relu6")),
    nn.Sigmoid: _simple(fn.unary("sigmoid")),
    nn.Tanh: _simple(fn.unary("tanh")),
    nn.SiLU: _simple(fn.unary("silu")),
    nn.Hardswish: _simple(fn.unary("hardswish")),
    nn.Hardsigmoid: _simple(fn.unary("hardsigmoid")),
    nn.Mish: _simple(fn.unary("mish")),
    nn.Softsign: _simple(fn.unary("softsign")),
    nn.GELU: _simple(fn.gelu, "approximate"),
    nn.Hardtanh: _simple(fn.hardtanh, "min_val", "max_val"),
    nn.LeakyReLU: _simple(fn.leaky_relu, "negative_slope"),
    nn.ELU: _simple(fn.elu, "alpha"),
    nn.Softplus: _simple(fn.softplus, "beta", "threshold"),
    nn.Softmax: _simple(fn.softmax, "dim"),
    nn.LogSoftmax: _simple(fn.log_softmax, "dim"),
    nn.MaxPool2d: _simple(
        fn.max_pool2d,
        "kernel_size",
        "stride",
        "padding",
        "dilation",
        "ceil_mode",
        "return_indices",
    ),
    nn.AvgPool2d: _simple(
        fn.avg_pool2d,
        "kernel_size",
        "stride",
        "padding",
        "ceil_mode",
        "count_include_pad",
        "divisor_override",
    ),
    nn.AdaptiveAvgPool2d: _simple(fn.adaptive_avg_pool2d, "output_size"),
    nn.AdaptiveMaxPool2d: _simple(fn.adaptive_max_pool2d, "output_size", "return_indices"),
    nn.GroupNorm: _group_norm,
    nn.Flatten: _simple(sf.flatten, "start_dim", "end_dim"),
    nn.Unflatten: _simple(sf.unflatten, "dim", "unflattened_size"),
}
