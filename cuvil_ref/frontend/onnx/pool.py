"""Converters for ONNX's pooling ops: ``MaxPool`` (with its ``Indices`` output) and
``AveragePool`` (1-D, 2-D and 3-D, any pads, ``ceil_mode``, ``count_include_pad``, dilations),
``GlobalAveragePool``, ``GlobalMaxPool``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.nn import _window, spatial_pads
from cuvil_ref.frontend.onnx.shape import static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops import REGISTRY

TABLE: dict[str, OnnxConverter] = {}


def _pool(cx: OnnxContext, node: OnnxNode, kind: str, indices: bool = False) -> list[Value]:
    """Max or average pooling over 1, 2 or 3 spatial dims (1-D pools run as 2-D with a unit
    row; 3-D pools need the IR's ``max_pool3d`` / ``avg_pool3d``).

    Symmetric pads up to half the kernel go to the IR pool as they are. Other pads become an
    explicit ``pad`` (padded to the output size ONNX's ``ceil_mode`` rule gives: the last window
    must start inside the input or its left padding); an average then divides by the pooled
    count of the cells that count (the input, plus the pads with ``count_include_pad``).
    With ``indices`` the result also holds MaxPool's ``Indices`` output.
    """
    x = x_of(node)
    k, strides, dilations = _window(node, x)
    sp = len(k)
    if sp not in (1, 2, 3) or (sp == 3 and f"{kind}_pool3d" not in REGISTRY):
        raise cx.error(f"{node.op_type} over {sp} spatial dims: Cuvil's IR pools 1-D and 2-D")
    pads = spatial_pads(cx, node, x, k, strides, dilations)
    one_d = sp == 1
    if one_d:
        x = cx.op("unsqueeze", [x], axis=2)
        k, strides, dilations = [1, *k], [1, *strides], [1, *dilations]
        pads = [0, pads[0], 0, pads[1]]
        sp = 2
    ceil = bool(node.attr("ceil_mode", 0))
    include = bool(node.attr("count_include_pad", 0))
    begin, end = pads[:sp], pads[sp:]
    direct = all(b == e <= kk // 2 for b, e, kk in zip(begin, end, k))
    direct = direct and (kind == "max" or all(d == 1 for d in dilations))
    window = {"kernel": tuple(k), "stride": tuple(strides), "padding": tuple(begin)}
    outs: list[Value]
    if indices:
        if "max_pool_with_indices" not in REGISTRY:
            raise cx.error("MaxPool's Indices output needs the IR op 'max_pool_with_indices'")
        if not direct:
            raise cx.error(
                "MaxPool's Indices output with pads larger than half the kernel or uneven is "
                "not supported"
            )
        y, idx = cx.op_multi(
            "max_pool_with_indices", [x], **window, dilation=tuple(dilations), ceil_mode=ceil
        )
        outs = [y, _onnx_indices(cx, node, x, idx)]
    elif direct and kind == "max":
        op = "max_pool2d" if sp == 2 else "max_pool3d"
        outs = [cx.op(op, [x], **window, dilation=tuple(dilations), ceil_mode=ceil)]
    elif direct:
        op = "avg_pool2d" if sp == 2 else "avg_pool3d"
        outs = [cx.op(op, [x], **window, ceil_mode=ceil, count_include_pad=include)]
    else:
        outs = [_explicit_pool(cx, x, kind, k, strides, dilations, pads, ceil, include)]
    return [cx.op("squeeze", [v], axes=(2,)) for v in outs] if one_d else outs


def _onnx_indices(cx: OnnxContext, node: OnnxNode, x: Value, idx: Value) -> Value:
    """The IR's index within each (row-major) spatial plane as ONNX's ``Indices``: a flat index
    into the whole input, ``(n * C + c) * plane + offset``, the offset column-major (the first
    spatial dim fastest) when ``storage_order=1``."""
    dims = static_dims(cx, x, "MaxPool's Indices output")
    spatial = dims[2:]
    plane = int(np.prod(spatial))
    if int(node.attr("storage_order", 0)):
        if len(spatial) != 2:
            raise cx.error("MaxPool storage_order=1 is supported over 2 spatial dims")
        h, w = spatial
        if "trunc_divide" in REGISTRY:
            row = cx.op("trunc_divide", [idx, cx.scalar(w, DType.i64)])
        else:  # indices are >= 0 and far below 2^53: f64 division, truncated, is exact
            row = cx.op("div", [cx.cast(idx, DType.f64), cx.scalar(w, DType.f64)])
            row = cx.cast(row, DType.i64)
        col = cx.op("sub", [idx, cx.op("mul", [row, cx.scalar(w, DType.i64)])])
        idx = cx.op("add", [cx.op("mul", [col, cx.scalar(h, DType.i64)]), row])
    base = np.arange(dims[0] * dims[1], dtype=np.int64).reshape(dims[0], dims[1]) * plane
    base = base.reshape(dims[0], dims[1], *([1] * len(spatial)))
    return cx.op("add", [idx, cx.constant(base, "plane_offsets")])


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
    sp = len(k)
    begin, end = pads[:sp], pads[sp:]
    extra = []
    for i in range(sp):
        n, b, e = dims[2 + i], begin[i], end[i]
        window = dilations[i] * (k[i] - 1) + 1
        size = (n + b + e - window) / strides[i] + 1
        out = int(np.ceil(size)) if ceil else int(np.floor(size))
        if ceil and (out - 1) * strides[i] >= n + b:
            out -= 1
        extra.append(max((out - 1) * strides[i] + window - (n + b + e), 0))
    # the IR's pad lists (begin, end) pairs from the last dim to the first, as torch's F.pad
    torch_pads = tuple(v for i in reversed(range(sp)) for v in (begin[i], end[i] + extra[i]))
    dt = x.type.dtype
    conv = "conv2d" if sp == 2 else "conv3d"
    if kind == "max":
        low = float("-inf") if dt.is_float else float(np.iinfo(dt.numpy).min)
        xp = cx.op("pad", [x], pads=torch_pads, value=low)
        op = "max_pool2d" if sp == 2 else "max_pool3d"
        return cx.op(
            op,
            [xp],
            kernel=tuple(k),
            stride=tuple(strides),
            padding=(0,) * sp,
            dilation=tuple(dilations),
        )
    if not dt.is_float:
        raise cx.error(f"AveragePool of a {dt.value} tensor is not supported")
    if conv not in REGISTRY:
        raise cx.error(f"AveragePool over {sp} spatial dims needs the IR op '{conv}'")
    xp = cx.op("pad", [x], pads=torch_pads, value=0.0)
    padded = [dims[2 + i] + begin[i] + end[i] + extra[i] for i in range(sp)]
    counted = np.zeros(padded, dtype=dt.numpy)
    if include:
        counted[tuple(slice(0, dims[2 + i] + begin[i] + end[i]) for i in range(sp))] = 1
    else:
        counted[tuple(slice(begin[i], begin[i] + dims[2 + i]) for i in range(sp))] = 1
    mask = cx.constant(counted.reshape(1, 1, *counted.shape), "pool_count")
    # window sums as a convolution with a ones kernel (dilation included), one channel at a time
    n, c = dims[0], dims[1]
    ones = cx.constant(np.ones((1, 1, *k), dtype=dt.numpy), "window")
    attrs = {"stride": tuple(strides), "dilation": tuple(dilations)}
    flat = cx.op("reshape", [xp], shape=(n * c, 1, *counted.shape))
    total = cx.op(conv, [flat, ones], **attrs)
    count = cx.op(conv, [mask, ones], **attrs)
    y = cx.op("div", [total, count])
    return cx.op("reshape", [y], shape=(n, c, *y.type.shape[2:]))


@onnx_op(TABLE, "MaxPool", 1, 8, 10, 11, 12, 22)
def max_pool(cx: OnnxContext, node: OnnxNode) -> Sequence[Value | None]:
    if node.output_used(1):
        return _pool(cx, node, "max", indices=True)
    return [_pool(cx, node, "max")[0], None]


@onnx_op(TABLE, "AveragePool", 1, 7, 10, 11, 19, 22)
def average_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    return _pool(cx, node, "avg")[0]


@onnx_op(TABLE, "GlobalAveragePool", 1, 22)
def global_average_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("mean", [x], axes=tuple(range(2, x.type.rank)), keepdim=True)


@onnx_op(TABLE, "GlobalMaxPool", 1, 22)
def global_max_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("amax", [x], axes=tuple(range(2, x.type.rank)), keepdim=True)


__all__ = ["TABLE"]
