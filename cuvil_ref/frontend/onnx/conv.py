"""Converters for ONNX's convolutions: ``Conv`` and ``ConvTranspose`` over 1, 2 or 3 spatial
dims (1-D runs as 2-D with a unit row; 3-D needs the IR's ``conv3d`` / ``conv_transpose``),
``ConvInteger``, ``QLinearConv``, ``LpPool`` and ``GlobalLpPool``.

``ConvTranspose`` is the convolution of the input with zeros inserted between its elements
(``stride - 1`` of them), padded by ``dilation * (kernel - 1) - pads`` (plus ``output_padding``
at the end), with the kernel flipped and its in/out channels swapped per group: the textbook
identity, in IR ops. ``output_shape`` and ``auto_pad`` fix the pads as the ONNX spec says.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.nn import _window, spatial_pads
from cuvil_ref.frontend.onnx.shape import select, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops import REGISTRY

TABLE: dict[str, OnnxConverter] = {}


def _to_2d(cx: OnnxContext, x: Value, w: Value | None = None) -> tuple[Value, Value | None]:
    x = cx.op("unsqueeze", [x], axis=2)
    return x, (cx.op("unsqueeze", [w], axis=2) if w is not None else None)


def conv2d(cx: OnnxContext, node: OnnxNode, x: Value, w: Value, b: Value | None) -> Value:
    """``Conv``'s attributes on 1-D or 2-D inputs, as the IR ``conv2d``."""
    kernel = node.attr("kernel_shape") or w.type.shape[2:]
    k, strides, dilations = _window(node, x, [int(v) for v in kernel])
    if len(k) not in (1, 2, 3) or (len(k) == 3 and "conv3d" not in REGISTRY):
        raise cx.error(f"{node.op_type} over {len(k)} spatial dims: Cuvil's IR convolves 1-D/2-D")
    pads = spatial_pads(cx, node, x, k, strides, dilations)
    if len(k) == 3:  # the IR's conv3d takes ONNX's pads order (all begins, then all ends)
        return cx.op(
            "conv3d",
            [x, w] + ([b] if b is not None else []),
            stride=tuple(strides),
            padding=tuple(pads),
            dilation=tuple(dilations),
            groups=int(node.attr("group", 1)),
        )
    one_d = len(k) == 1
    if one_d:
        x, w2 = _to_2d(cx, x, w)
        assert w2 is not None
        w = w2
        strides, dilations, pads = [1, *strides], [1, *dilations], [0, pads[0], 0, pads[1]]
    inputs = [x, w] + ([b] if b is not None else [])
    y = cx.op(
        "conv2d",
        inputs,
        stride=tuple(strides),
        padding=tuple(pads),
        dilation=tuple(dilations),
        groups=int(node.attr("group", 1)),
    )
    return cx.op("squeeze", [y], axes=(2,)) if one_d else y


@onnx_op(TABLE, "Conv", 1, 11, 22)
def conv(cx: OnnxContext, node: OnnxNode) -> Value:
    x, w = node.inputs[0], node.inputs[1]
    assert x is not None and w is not None
    return conv2d(cx, node, x, w, node.input(2))


def _centered(cx: OnnxContext, v: Value, zp: Value | None, axis: int | None) -> Value:
    vi = cx.cast(v, DType.i32)
    if zp is None:
        return vi
    zpi = cx.cast(zp, DType.i32)
    if axis is not None and zpi.type.rank == 1 and zpi.type.shape[0] != 1:
        shape = [1] * v.type.rank
        shape[axis] = zpi.type.shape[0]  # type: ignore[call-overload]
        zpi = cx.op("reshape", [zpi], shape=tuple(shape))
    elif zpi.type.rank == 1:
        zpi = cx.op("reshape", [zpi], shape=())
    return cx.op("sub", [vi, zpi])


@onnx_op(TABLE, "ConvInteger", 10)
def conv_integer(cx: OnnxContext, node: OnnxNode) -> Value:
    """``conv(x - x_zero_point, w - w_zero_point)`` exactly, in int32."""
    x, w = node.inputs[0], node.inputs[1]
    assert x is not None and w is not None
    xi = _centered(cx, x, node.input(2), None)
    wi = _centered(cx, w, node.input(3), 0)
    return conv2d(cx, node, xi, wi, None)


@onnx_op(TABLE, "QLinearConv", 10)
def qlinear_conv(cx: OnnxContext, node: OnnxNode) -> Value:
    """``quantize(conv_int32(x - x_zp, w - w_zp) + bias) * x_scale * w_scale`` with the
    output's scale and zero point (per output channel weight scales)."""
    from cuvil_ref.frontend.onnx.quant import quantize

    x, xs, xzp, w, ws, wzp, ys, yzp = node.inputs[:8]
    b = node.input(8)
    assert x is not None and w is not None and xs is not None and ws is not None
    assert ys is not None and yzp is not None
    acc = conv2d(
        cx,
        node,
        _centered(cx, x, xzp, None),
        _centered(cx, w, wzp, 0),
        cx.cast(b, DType.i32) if b is not None else None,
    )
    scale = cx.cast(ws, DType.f32)
    if scale.type.rank == 1 and scale.type.shape[0] != 1:
        scale = cx.op("reshape", [scale], shape=(1, -1) + (1,) * (acc.type.rank - 2))
    real = cx.op("mul", [cx.op("mul", [cx.cast(acc, DType.f32), cx.cast(xs, DType.f32)]), scale])
    return quantize(cx, real, ys, yzp, yzp.type.dtype)


def _insert_zeros(cx: OnnxContext, x: Value, axis: int, stride: int) -> Value:
    """``x`` with ``stride - 1`` zeros between neighbours along ``axis``."""
    if stride == 1:
        return x
    dims = list(static_dims(cx, x, "ConvTranspose"))
    n = dims[axis]
    y = cx.op("unsqueeze", [x], axis=axis + 1)
    zshape = list(y.type.shape)
    zshape[axis + 1] = stride - 1
    zeros = cx.constant(np.zeros(zshape, dtype=x.type.dtype.numpy), "zeros")
    y = cx.op("concat", [y, zeros], axis=axis + 1)
    dims[axis] = n * stride
    y = cx.op("reshape", [y], shape=tuple(dims))
    return cx.op("slice", [y], axis=axis, start=0, end=(n - 1) * stride + 1)


@onnx_op(TABLE, "ConvTranspose", 1, 11, 22)
def conv_transpose(cx: OnnxContext, node: OnnxNode) -> Value:
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and w is not None
    if x.type.rank == 5 and "conv_transpose" in REGISTRY:
        return _conv_transpose_nd(cx, node, x, w, b)
    one_d = x.type.rank == 3
    if one_d:
        x, w2 = _to_2d(cx, x, w)
        assert w2 is not None
        w = w2
    if x.type.rank != 4:
        raise cx.error(
            f"ConvTranspose over {x.type.rank - 2} spatial dims: Cuvil's IR convolves 1-D/2-D"
        )
    dims = static_dims(cx, x, "ConvTranspose")
    wdims = static_dims(cx, w, "ConvTranspose")
    k = list(wdims[2:])
    n_sp = 1 if one_d else 2

    def attr2(name: str, fill: int) -> list[int]:
        v = [int(a) for a in node.attr(name, [fill] * n_sp)]
        return [fill, *v] if one_d else v

    strides, dilations = attr2("strides", 1), attr2("dilations", 1)
    out_pad = attr2("output_padding", 0)
    group = int(node.attr("group", 1))
    window = [d * (kk - 1) + 1 for d, kk in zip(dilations, k)]
    auto = str(node.attr("auto_pad", "NOTSET"))
    out_shape = node.attr("output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = (
            [int(v) for v in out_shape]
            if out_shape is not None
            else [dims[2 + i] * strides[i] for i in range(2)][-n_sp:]
        )
        if one_d:
            target = [1, *target[-1:]]
        begin, end = [], []
        for i in range(2):
            total = strides[i] * (dims[2 + i] - 1) + out_pad[i] + window[i] - target[i]
            if auto == "SAME_UPPER":
                begin.append(total // 2)
                end.append(total - total // 2)
            else:
                begin.append(total - total // 2)
                end.append(total // 2)
    elif auto == "VALID" or node.attr("pads") is None:
        begin, end = [0, 0], [0, 0]
    else:
        p = [int(v) for v in node.attr("pads")]
        begin, end = ([0, p[0]], [0, p[1]]) if one_d else (p[:2], p[2:])
    y = _insert_zeros(cx, _insert_zeros(cx, x, 2, strides[0]), 3, strides[1])
    full = [window[i] - 1 for i in range(2)]
    torch_pads = (
        full[1] - begin[1],
        full[1] - end[1] + out_pad[1],
        full[0] - begin[0],
        full[0] - end[0] + out_pad[0],
    )
    y = cx.op("pad", [y], pads=torch_pads, value=0.0)
    cin, cout_g = wdims[0], wdims[1]
    wt = cx.op("reshape", [w], shape=(group, cin // group, cout_g, *k))
    wt = cx.op("permute", [wt], perm=(0, 2, 1, 3, 4))
    wt = cx.op("reshape", [wt], shape=(group * cout_g, cin // group, *k))
    wt = select(cx, select(cx, wt, 2, np.arange(k[0] - 1, -1, -1)), 3, np.arange(k[1] - 1, -1, -1))
    inputs = [y, wt] + ([b] if b is not None else [])
    out = cx.op("conv2d", inputs, dilation=tuple(dilations), groups=group)
    return cx.op("squeeze", [out], axes=(2,)) if one_d else out


def _transpose_crop(
    cx: OnnxContext, node: OnnxNode, dims: Sequence[int], k: Sequence[int]
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """ConvTranspose's strides, dilations, output_padding and the cells cut from the begin and
    the end of each spatial dim of the full (unpadded) result, ``auto_pad`` and
    ``output_shape`` resolved."""
    sp = len(k)
    strides = [int(a) for a in node.attr("strides", [1] * sp)]
    dilations = [int(a) for a in node.attr("dilations", [1] * sp)]
    out_pad = [int(a) for a in node.attr("output_padding", [0] * sp)]
    window = [d * (kk - 1) + 1 for d, kk in zip(dilations, k)]
    auto = str(node.attr("auto_pad", "NOTSET"))
    out_shape = node.attr("output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = (
            [int(v) for v in out_shape][-sp:]
            if out_shape is not None
            else [dims[2 + i] * strides[i] for i in range(sp)]
        )
        begin, end = [], []
        for i in range(sp):
            total = strides[i] * (dims[2 + i] - 1) + out_pad[i] + window[i] - target[i]
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
    elif auto == "VALID" or node.attr("pads") is None:
        begin, end = [0] * sp, [0] * sp
    else:
        p = [int(v) for v in node.attr("pads")]
        begin, end = p[:sp], p[sp:]
    return strides, dilations, out_pad, begin, end


def _conv_transpose_nd(
    cx: OnnxContext, node: OnnxNode, x: Value, w: Value, b: Value | None
) -> Value:
    """ConvTranspose over 3 spatial dims with the IR's ``conv_transpose``: the full result
    (no padding), cut to ONNX's begin/end pads, zero cells appended for ``output_padding``
    beyond the full result, then the bias."""
    dims = static_dims(cx, x, "ConvTranspose")
    k = list(static_dims(cx, w, "ConvTranspose")[2:])
    sp = len(k)
    strides, dilations, out_pad, begin, end = _transpose_crop(cx, node, dims, k)
    y = cx.op(
        "conv_transpose",
        [x, w],
        stride=tuple(strides),
        padding=(0,) * sp,
        output_padding=(0,) * sp,
        dilation=tuple(dilations),
        groups=int(node.attr("group", 1)),
    )
    for i in range(sp):
        full = y.type.shape[2 + i]
        assert isinstance(full, int)
        stop = full - end[i] + out_pad[i]
        if begin[i] or stop < full:
            y = cx.op("slice", [y], axis=2 + i, start=begin[i], end=min(stop, full))
        if stop > full:
            widths = [0] * (2 * (y.type.rank - 2))
            widths[2 * (y.type.rank - 3 - i) + 1] = stop - full
            y = cx.op("pad", [y], pads=tuple(widths), value=0.0)
    if b is not None:
        y = cx.op("add", [y, cx.op("reshape", [b], shape=(1, -1) + (1,) * sp)])
    return y


def _lp_window(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    p = float(node.attr("p", 2))
    k, strides, dilations = _window(node, x)
    if len(k) not in (1, 2, 3) or (len(k) == 3 and "conv3d" not in REGISTRY):
        raise cx.error(f"LpPool over {len(k)} spatial dims: Cuvil's IR pools 1-D and 2-D")
    pads = spatial_pads(cx, node, x, k, strides, dilations)
    powered = cx.op("pow", [cx.op("abs", [x]), cx.scalar(p, x.type.dtype)])
    one_d = len(k) == 1
    if one_d:
        powered, _ = _to_2d(cx, powered)
        k, strides, dilations, pads = (
            [1, *k],
            [1, *strides],
            [1, *dilations],
            [0, pads[0], 0, pads[1]],
        )
    n, c, *spatial = static_dims(cx, powered, "LpPool")
    flat = cx.op("reshape", [powered], shape=(n * c, 1, *spatial))
    ones = cx.constant(np.ones((1, 1, *k), dtype=x.type.dtype.numpy), "window")
    total = cx.op(
        "conv2d" if len(k) == 2 else "conv3d",
        [flat, ones],
        stride=tuple(strides),
        padding=tuple(pads),
        dilation=tuple(dilations),
    )
    y = cx.op("pow", [total, cx.scalar(1.0 / p, x.type.dtype)])
    y = cx.op("reshape", [y], shape=(n, c, *y.type.shape[2:]))
    return cx.op("squeeze", [y], axes=(2,)) if one_d else y


@onnx_op(TABLE, "LpPool", 2, 11, 18, 22)
def lp_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    """``(sum over the window of |x|^p)^(1/p)``, zero padding."""
    if int(node.attr("ceil_mode", 0)):
        raise cx.error("LpPool with ceil_mode=1 is not supported")
    return _lp_window(cx, node)


@onnx_op(TABLE, "GlobalLpPool", 2, 22)
def global_lp_pool(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    p = float(node.attr("p", 2))
    powered = cx.op("pow", [cx.op("abs", [x]), cx.scalar(p, x.type.dtype)])
    total = cx.op("sum", [powered], axes=tuple(range(2, x.type.rank)), keepdim=True)
    return cx.op("pow", [total, cx.scalar(1.0 / p, x.type.dtype)])


__all__ = ["TABLE", "conv2d"]
