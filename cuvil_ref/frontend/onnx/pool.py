"""Converters for ONNX's pooling ops: ``MaxPool``, ``AveragePool`` (1-D and 2-D, any pads,
``ceil_mode``, ``count_include_pad``, dilations), ``GlobalAveragePool``, ``GlobalMaxPool``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.nn import _window, spatial_pads
from cuvil_ref.frontend.onnx.shape import static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _pool2d(cx: OnnxContext, node: OnnxNode, kind: str) -> Value:
    """Max or average pooling over 1 or 2 spatial dims (1-D pools run as 2-D with a unit row).

    Symmetric pads up to half the kernel go to the IR pool as they are. Other pads become an
    explicit ``pad`` (padded to the output size ONNX's ``ceil_mode`` rule gives: the last window
    must start inside the input or its left padding); an average then divides by the pooled
    count of the cells that count (the input, plus the pads with ``count_include_pad``).
    """
    x = x_of(node)
    k, strides, dilations = _window(node, x)
    if len(k) not in (1, 2):
        raise cx.error(f"{node.op_type} over {len(k)} spatial dims: Cuvil's IR pools 1-D and 2-D")
    pads = spatial_pads(cx, node, x, k, strides, dilations)
    one_d = len(k) == 1
    if one_d:
        x = cx.op("unsqueeze", [x], axis=2)
        k, strides, dilations = [1, *k], [1, *strides], [1, *dilations]
        pads = [0, pads[0], 0, pads[1]]
    ceil = bool(node.attr("ceil_mode", 0))
    include = bool(node.attr("count_include_pad", 0))
    top, left, bottom, right = pads
    direct = top == bottom <= k[0] // 2 and left == right <= k[1] // 2
    direct = direct and (kind == "max" or all(d == 1 for d in dilations))
    if direct:
        if kind == "max":
            y = cx.op(
                "max_pool2d",
                [x],
                kernel=tuple(k),
                stride=tuple(strides),
                padding=(top, left),
                dilation=tuple(dilations),
                ceil_mode=ceil,
            )
        else:
            y = cx.op(
                "avg_pool2d",
                [x],
                kernel=tuple(k),
                stride=tuple(strides),
                padding=(top, left),
                ceil_mode=ceil,
                count_include_pad=include,
            )
    else:
        y = _explicit_pool(cx, x, kind, k, strides, dilations, pads, ceil, include)
    return cx.op("squeeze", [y], axes=(2,)) if one_d else y


def _explicit_pool(
    cx: OnnxContext,
    x: Value,
    kind: str,
    k: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    ceil: bool,
    include: bool,
) -> Value:
    dims = static_dims(cx, x, "pooling with large or asymmetric pads")
    extra = []
    for i in range(2):
        n, b, e = dims[2 + i], pads[i], pads[2 + i]
        window = dilations[i] * (k[i] - 1) + 1
        size = (n + b + e - window) / strides[i] + 1
        out = int(np.ceil(size)) if ceil else int(np.floor(size))
        if ceil and (out - 1) * strides[i] >= n + b:
            out -= 1
        extra.append(max((out - 1) * strides[i] + window - (n + b + e), 0))
    top, left, bottom, right = pads
    torch_pads = (left, right + extra[1], top, bottom + extra[0])
    dt = x.type.dtype
    if kind == "max":
        low = float("-inf") if dt.is_float else float(np.iinfo(dt.numpy).min)
        xp = cx.op("pad", [x], pads=torch_pads, value=low)
        return cx.op(
            "max_pool2d",
            [xp],
            kernel=tuple(k),
            stride=tuple(strides),
            padding=(0, 0),
            dilation=tuple(dilations),
        )
    if not dt.is_float:
        raise cx.error(f"AveragePool of a {dt.value} tensor is not supported")
    xp = cx.op("pad", [x], pads=torch_pads, value=0.0)
    counted = np.zeros(
        (dims[2] + top + bottom + extra[0], dims[3] + left + right + extra[1]), dtype=dt.numpy
    )
    if include:
        counted[: dims[2] + top + bottom, : dims[3] + left + right] = 1
    else:
        counted[top : top + dims[2], left : left + dims[3]] = 1
    mask = cx.constant(counted.reshape(1, 1, *counted.shape), "pool_count")
    # window sums as a convolution with a ones kernel (dilation included), one channel at a time
    n, c = dims[0], dims[1]
    ones = cx.constant(np.ones((1, 1, *k), dtype=dt.numpy), "window")
    attrs = {"stride": tuple(strides), "dilation": tuple(dilations)}
    flat = cx.op("reshape", [xp], shape=(n * c, 1, *counted.shape))
    total = cx.op("conv2d", [flat, ones], **attrs)
    count = cx.op("conv2d", [mask, ones], **attrs)
    y = cx.op("div", [total, count])
    return cx.op("reshape", [y], shape=(n, c, *y.type.shape[2:]))


@onnx_op(TABLE, "MaxPool", 1, 8, 10, 11, 12, 22)
def max_pool(cx: OnnxContext, node: OnnxNode) -> Sequence[Value | None]:
    if int(node.attr("storage_order", 0)):
        raise cx.error("MaxPool storage_order=1 (column-major indices) is not supported")
    return [_pool2d(cx, node, "max"), None]


@onnx_op(TABLE, "AveragePool", 1, 7, 10, 11, 19, 22)
def average_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    return _pool2d(cx, node, "avg")


@onnx_op(TABLE, "GlobalAveragePool", 1, 22)
def global_average_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("mean", [x], axes=tuple(range(2, x.type.rank)), keepdim=True)


@onnx_op(TABLE, "GlobalMaxPool", 1, 22)
def global_max_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("amax", [x], axes=tuple(range(2, x.type.rank)), keepdim=True)


__all__ = ["TABLE"]
