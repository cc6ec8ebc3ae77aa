"""Converters for ONNX's activation functions, each with ONNX's own formula and attribute
defaults (``LeakyRelu`` alpha 0.01, ``HardSigmoid`` alpha 0.2 / beta 0.5, ``Selu``'s constants,
``Celu``, ``Shrink``, ``ThresholdedRelu``, ``PRelu`` with a broadcast slope...)."""

from __future__ import annotations

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _f(cx: OnnxContext, x: Value, value: float) -> Value:
    return cx.scalar(value, x.type.dtype)


@onnx_op(TABLE, "LeakyRelu", 6, 16)
def leaky_relu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("leaky_relu", [x_of(node)], negative_slope=float(node.attr("alpha", 0.01)))


@onnx_op(TABLE, "Elu", 6, 22)
def elu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("elu", [x_of(node)], alpha=float(node.attr("alpha", 1.0)))


@onnx_op(TABLE, "Selu", 6, 22)
def selu(cx: OnnxContext, node: OnnxNode) -> Value:
    """``gamma * (x if x > 0 else alpha * (e^x - 1))`` = ``gamma * elu(x, alpha)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    return cx.op("mul", [cx.op("elu", [x], alpha=alpha), _f(cx, x, gamma)])


@onnx_op(TABLE, "Celu", 12)
def celu(cx: OnnxContext, node: OnnxNode) -> Value:
    """``max(0, x) + min(0, alpha * (e^(x/alpha) - 1))`` = ``alpha * elu(x / alpha)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.0))
    inner = cx.op("elu", [cx.op("div", [x, _f(cx, x, alpha)])], alpha=1.0)
    return cx.op("mul", [inner, _f(cx, x, alpha)])


@onnx_op(TABLE, "HardSigmoid", 6, 22)
def hard_sigmoid(cx: OnnxContext, node: OnnxNode) -> Value:
    """``max(0, min(1, alpha * x + beta))``."""
    x = x_of(node)
    alpha, beta = float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    y = cx.op("add", [cx.op("mul", [x, _f(cx, x, alpha)]), _f(cx, x, beta)])
    return cx.op("clamp", [y], min=0.0, max=1.0)


@onnx_op(TABLE, "HardSwish", 14, 22)
def hard_swish(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""
    x = x_of(node)
    y = cx.op("add", [cx.op("mul", [x, _f(cx, x, 1 / 6)]), _f(cx, x, 0.5)])
    return cx.op("mul", [x, cx.op("clamp", [y], min=0.0, max=1.0)])


@onnx_op(TABLE, "Softsign", 1, 22)
def softsign(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("div", [x, cx.op("add", [cx.op("abs", [x]), _f(cx, x, 1.0)])])


@onnx_op(TABLE, "Softplus", 1, 22)
def softplus(cx: OnnxContext, node: OnnxNode) -> Value:
    """``ln(e^x + 1)``, computed stably as ``max(x, 0) + ln(1 + e^-|x|)``."""
    x = x_of(node)
    e = cx.op("exp", [cx.op("neg", [cx.op("abs", [x])])])
    tail = cx.op("log", [cx.op("add", [e, _f(cx, x, 1.0)])])
    return cx.op("add", [cx.op("relu", [x]), tail])


@onnx_op(TABLE, "ThresholdedRelu", 10, 22)
def thresholded_relu(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    keep = cx.op("gt", [x, _f(cx, x, float(node.attr("alpha", 1.0)))])
    return cx.op("where", [keep, x, _f(cx, x, 0.0)])


@onnx_op(TABLE, "Shrink", 9)
def shrink(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, else 0 (any numeric type)."""
    x = x_of(node)
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    dt = x.type.dtype
    low = cx.op("lt", [x, cx.scalar(-lambd, dt)])
    high = cx.op("gt", [x, cx.scalar(lambd, dt)])
    if dt.is_float:
        lo_v = cx.op("add", [x, cx.scalar(bias, dt)])
        hi_v = cx.op("sub", [x, cx.scalar(bias, dt)])
    else:  # integer tensors: compute in f64, ONNX casts the result back
        xf = cx.cast(x, DType.f64)
        lo_v = cx.cast(cx.op("add", [xf, cx.scalar(bias, DType.f64)]), dt)
        hi_v = cx.cast(cx.op("sub", [xf, cx.scalar(bias, DType.f64)]), dt)
    zero = cx.scalar(0, dt)
    return cx.op("where", [low, lo_v, cx.op("where", [high, hi_v, zero])])


@onnx_op(TABLE, "PRelu", 7, 9, 16)
def prelu(cx: OnnxContext, node: OnnxNode) -> Value:
    x, slope = node.inputs[0], node.inputs[1]
    assert x is not None and slope is not None
    neg = cx.op("lt", [x, cx.scalar(0, x.type.dtype)])
    return cx.op("where", [neg, cx.op("mul", [x, slope]), x])


@onnx_op(TABLE, "Gelu", 20)
def gelu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("gelu", [x_of(node)], approximate=str(node.attr("approximate", "none")))


@onnx_op(TABLE, "Swish", 24)
def swish(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x * sigmoid(alpha * x)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.0))
    return cx.op("mul", [x, cx.op("sigmoid", [cx.op("mul", [x, _f(cx, x, alpha)])])])


__all__ = ["TABLE"]
