"""Converters for torch.nn layers and their functional forms: activations with attributes,
dropout, normalization, linear algebra, convolution, pooling and padding.

Each normalizes torch's argument spellings (int or pair, ``"same"`` padding) into op attrs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import pair, rank, static_dim
from cuvil_ref.frontend.convert_elementwise import add, binary
from cuvil_ref.ir.graph import Value

# --------------------------------------------------------------------------- activations


def gelu(cx: Converter, input: Value, approximate: str = "none") -> Value:
    return cx.op("gelu", [input], approximate=approximate)


def hardtanh(
    cx: Converter, input: Value, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Value:
    if (min_val, max_val) == (0.0, 6.0):
        return cx.op("relu6", [input])
    return cx.op("hardtanh", [input], min_val=min_val, max_val=max_val)


def leaky_relu(
    cx: Converter, input: Value, negative_slope: float = 0.01, inplace: bool = False
) -> Value:
    return cx.op("leaky_relu", [input], negative_slope=negative_slope)


def elu(cx: Converter, input: Value, alpha: float = 1.0, inplace: bool = False) -> Value:
    return cx.op("elu", [input], alpha=alpha)


def softplus(cx: Converter, input: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
    return cx.op("softplus", [input], beta=beta, threshold=threshold)


def dropout(
    cx: Converter, input: Value, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Value:
    if training:
        raise CaptureError(
            "dropout is called with training=True, so it would drop values at inference; "
            "call model.eval() and pass training=self.training to F.dropout"
        )
    return input


# --------------------------------------------------------------------------- normalization


def layer_norm(
    cx: Converter,
    input: Value,
    normalized_shape: Any,
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Value:
    shape = (
        pair(normalized_shape, 1)
        if isinstance(normalized_shape, int)
        else tuple(int(d) for d in normalized_shape)
    )
    weight = _ones_if_bias_only(cx, weight, bias)
    return cx.op("layer_norm", [input, weight, bias], normalized_shape=shape, eps=float(eps))


def _ones_if_bias_only(cx: Converter, weight: Value | None, bias: Value | None) -> Value | None:
    """Optional inputs are positional: a bias without a weight needs a weight of ones."""
    if weight is None and bias is not None:
        return cx.constant(np.ones(bias.type.shape, bias.type.dtype.numpy), "ones")
    return weight


def batch_norm(
    cx: Converter,
    input: Value,
    running_mean: Value | None,
    running_var: Value | None,
    weight: Value | None = None,
    bias: Value | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Value:
    if training or running_mean is None or running_var is None:
        raise CaptureError(
            "batch_norm runs in training mode (batch statistics); call model.eval() before "
            "capture so it uses its running statistics"
        )
    if weight is None and bias is not None:
        weight = cx.constant(np.ones(bias.type.shape, bias.type.dtype.numpy), "ones")
    return cx.op("batch_norm", [input, running_mean, running_var, weight, bias], eps=float(eps))


def group_norm(
    cx: Converter,
    input: Value,
    num_groups: int,
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Value:
    weight = _ones_if_bias_only(cx, weight, bias)
    return cx.op("group_norm", [input, weight, bias], num_groups=int(num_groups), eps=float(eps))


def rms_norm(
    cx: Converter,
    input: Value,
    normalized_shape: Any,
    weight: Value | None = None,
    eps: float | None = None,
) -> Value:
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, int)
        else tuple(int(d) for d in normalized_shape)
    )
    return cx.op("rms_norm", [input, weight], normalized_shape=shape, eps=eps)


# --------------------------------------------------------------------------- linear algebra


def linear(cx: Converter, input: Value, weight: Value, bias: Value | None = None) -> Value:
    return cx.op("linear", [input, weight, bias])


def matmul(cx: Converter, input: Value, other: Value) -> Value:
    return cx.op("matmul", [input, other])


def addmm(
    cx: Converter, input: Value, mat1: Value, mat2: Value, beta: Any = 1, alpha: Any = 1
) -> Value:
    prod_ = (
        binary(cx, "mul", matmul(cx, mat1, mat2), alpha) if alpha != 1 else matmul(cx, mat1, mat2)
    )
    return add(cx, prod_, binary(cx, "mul", input, beta) if beta != 1 else input)


# --------------------------------------------------------------------------- conv and pooling


def conv_padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    """torch padding (int, pair, "valid", "same") -> (top, left, bottom, right)."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        lo = [t // 2 for t in totals]
        return (lo[0], lo[1], totals[0] - lo[0], totals[1] - lo[1])
    ph, pw = pair(padding)
    return (ph, pw, ph, pw)


def conv2d(
    cx: Converter,
    input: Value,
    weight: Value,
    bias: Value | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Value:
    if rank(weight) != 4:
        raise CaptureError(f"conv2d expects a 4-D weight, got {weight.type}")
    dil = pair(dilation)
    kernel = tuple(int(k) for k in weight.type.shape[2:])
    if padding == "same" and pair(stride) != (1, 1):
        raise CaptureError("padding='same' needs stride 1 (as in PyTorch)")
    pads = conv_padding(padding, kernel, dil)
    return cx.op(
        "conv2d",
        [input, weight, bias],
        stride=pair(stride),
        padding=pads,
        dilation=dil,
        groups=int(groups),
    )


def max_pool2d(
    cx: Converter,
    input: Value,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Value:
    if return_indices:
        raise CaptureError("max_pool2d with return_indices=True is not supported by Cuvil")
    kernel = pair(kernel_size)
    strides = kernel if stride is None or stride == [] or stride == () else pair(stride)
    return cx.op(
        "max_pool2d",
        [input],
        kernel=kernel,
        stride=strides,
        padding=pair(padding),
        dilation=pair(dilation),
        ceil_mode=bool(ceil_mode),
    )


def avg_pool2d(
    cx: Converter,
    input: Value,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    kernel = pair(kernel_size)
    strides = kernel if stride is None or stride == [] or stride == () else pair(stride)
    return cx.op(
        "avg_pool2d",
        [input],
        kernel=kernel,
        stride=strides,
        padding=pair(padding),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=divisor_override,
    )


def adaptive_avg_pool2d(
    cx: Converter, input: Value, output_size: Any, op: str = "adaptive_avg_pool2d"
) -> Value:
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * 2
    for i, s in enumerate(sizes):
        if s is None:
            sizes[i] = static_dim(input, i - 2, "adaptive_avg_pool2d")
    return cx.op(op, [input], output_size=tuple(int(s) for s in sizes))


def adaptive_max_pool2d(
    cx: Converter, input: Value, output_size: Any, return_indices: bool = False
) -> Value:
    if return_indices:
        raise CaptureError("adaptive_max_pool2d with return_indices=True is not supported")
    return adaptive_avg_pool2d(cx, input, output_size, "adaptive_max_pool2d")


def pad(
    cx: Converter,
    input: Value,
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Value:
    if mode != "constant":
        raise CaptureError(
            f"F.pad mode={mode!r} is not supported by Cuvil; only mode='constant' is"
        )
    return cx.op(
        "pad",
        [input],
        pads=tuple(int(p) for p in pad),
        value=0.0 if value is None else float(value),
    )
