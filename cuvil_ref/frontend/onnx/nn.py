"""Converters for ONNX's neural-network ops: ``Conv``, ``Gemm``, ``MatMul``, pooling, the
normalizations, softmax-like ops and ``Dropout`` (the identity at inference).

``auto_pad`` (``SAME_UPPER``, ``SAME_LOWER``, ``VALID``) is resolved to explicit pads here from
the static spatial sizes; asymmetric pads that an IR pool cannot take become an explicit ``pad``
first (``-inf`` for max pooling, zeros for average pooling that counts padding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def spatial_pads(
    cx: OnnxContext,
    node: OnnxNode,
    x: Value,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX ``pads`` (all begins, then all ends), with ``auto_pad`` resolved."""
    k = len(kernel)
    auto = str(node.attr("auto_pad", "NOTSET"))
    if auto in ("NOTSET", ""):
        pads = node.attr("pads")
        return [0] * (2 * k) if pads is None else [int(p) for p in pads]
    if auto == "VALID":
        return [0] * (2 * k)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise cx.error(f"auto_pad {auto!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    dims = static_dims(cx, x, f"auto_pad={auto}")[2:]
    begin, end = [], []
    for d, kk, s, dl in zip(dims, kernel, strides, dilations):
        out = -(-d // s)
        total = max((out - 1) * s + (kk - 1) * dl + 1 - d, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin + end


def _window(node: OnnxNode, x: Value, kernel: Sequence[int] | None = None):  # type: ignore[no-untyped-def]
    k = list(kernel) if kernel is not None else [int(v) for v in node.attr("kernel_shape")]
    n = len(k)
    strides = [int(v) for v in node.attr("strides", [1] * n)]
    dilations = [int(v) for v in node.attr("dilations", [1] * n)]
    return k, strides, dilations


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


@onnx_op(TABLE, "MatMul", 1, 9, 13)
def matmul(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("matmul", [node.inputs[0], node.inputs[1]])  # type: ignore[list-item]


@onnx_op(TABLE, "Gemm", 7, 9, 11, 13)
def gemm(cx: OnnxContext, node: OnnxNode) -> Value:
    """``alpha * A' @ B' + beta * C`` (``A'``, ``B'`` transposed when ``transA``/``transB``)."""
    a, b, c = node.inputs[0], node.inputs[1], node.input(2)
    assert a is not None and b is not None
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if int(node.attr("transA", 0)):
        a = cx.op("permute", [a], perm=(1, 0))
    if (
        int(node.attr("transB", 0))
        and c is not None
        and alpha == 1.0
        and beta == 1.0
        and c.type.rank == 1
    ):
        return cx.op("linear", [a, b, c])  # the common fully connected layer
    if int(node.attr("transB", 0)):
        b = cx.op("permute", [b], perm=(1, 0))
    y = cx.op("matmul", [a, b])
    dt = y.type.dtype
    if alpha != 1.0:
        y = cx.op("mul", [y, cx.scalar(alpha, dt)])
    if c is not None:
        if beta != 1.0:
            c = cx.op("mul", [c, cx.scalar(beta, dt)])
        y = cx.op("add", [y, c])
    return y


@onnx_op(TABLE, "BatchNormalization", 7, 9, 14, 15)
def batch_norm(cx: OnnxContext, node: OnnxNode) -> Value:
    if int(node.attr("training_mode", 0)):
        raise cx.error("BatchNormalization in training mode; export the model in eval mode")
    x, scale, bias, mean, var = node.inputs[:5]
    return cx.op(
        "batch_norm",
        [x, mean, var, scale, bias],  # type: ignore[list-item]
        eps=float(node.attr("epsilon", 1e-5)),
    )


@onnx_op(TABLE, "InstanceNormalization", 1, 6, 22)
def instance_norm(cx: OnnxContext, node: OnnxNode) -> Value:
    x, scale, bias = node.inputs[:3]
    assert x is not None
    c = x.type.shape[1]
    if not isinstance(c, int):
        raise cx.error("InstanceNormalization needs a static channel count")
    return cx.op(
        "group_norm",
        [x, scale, bias],
        num_groups=c,  # type: ignore[list-item]
        eps=float(node.attr("epsilon", 1e-5)),
    )


def _stash(x: Value, node: OnnxNode) -> DType:
    return DType.f32 if int(node.attr("stash_type", 1)) == 1 else x.type.dtype


@onnx_op(TABLE, "LayerNormalization", 17)
def layer_norm(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """``(x - mean) * inv_std * scale + bias`` over dims ``axis..``; also Mean and InvStdDev
    (kept dims), computed in ``stash_type`` (f32 by default)."""
    x, scale, bias = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and scale is not None
    rank = x.type.rank
    axis = axis_of(int(node.attr("axis", -1)), rank, cx)
    eps = float(node.attr("epsilon", 1e-5))
    norm_shape = tuple(x.type.shape[axis:])
    simple = (
        node.num_outputs == 1
        and tuple(scale.type.shape) == norm_shape
        and (bias is None or tuple(bias.type.shape) == norm_shape)
        and all(isinstance(d, int) for d in norm_shape)
    )
    if simple:
        ins = [x, scale] + ([bias] if bias is not None else [])
        return [cx.op("layer_norm", ins, normalized_shape=norm_shape, eps=eps)]
    dt = _stash(x, node)
    xs = cx.cast(x, dt)
    axes = tuple(range(axis, rank))
    mean = cx.op("mean", [xs], axes=axes, keepdim=True)
    d = cx.op("sub", [xs, mean])
    var = cx.op("mean", [cx.op("mul", [d, d])], axes=axes, keepdim=True)
    inv = cx.op("rsqrt", [cx.op("add", [var, cx.scalar(eps, dt)])])
    y = cx.cast(cx.op("mul", [d, inv]), x.type.dtype)
    y = cx.op("mul", [y, scale])
    if bias is not None:
        y = cx.op("add", [y, bias])
    return [y, mean, inv]


@onnx_op(TABLE, "GroupNormalization", 21)
def group_norm(cx: OnnxContext, node: OnnxNode) -> Value:
    x, scale, bias = node.inputs[:3]
    return cx.op(
        "group_norm",
        [x, scale, bias],  # type: ignore[list-item]
        num_groups=int(node.attr("num_groups")),
        eps=float(node.attr("epsilon", 1e-5)),
    )


@onnx_op(TABLE, "RMSNormalization", 23)
def rms_norm(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x / sqrt(mean(x^2 over axis..) + eps) * scale``, computed in ``stash_type``."""
    x, scale = node.inputs[0], node.inputs[1]
    assert x is not None and scale is not None
    axis = axis_of(int(node.attr("axis", -1)), x.type.rank, cx)
    eps = float(node.attr("epsilon", 1e-5))
    dt = _stash(x, node)
    xs = cx.cast(x, dt)
    ms = cx.op("mean", [cx.op("mul", [xs, xs])], axes=tuple(range(axis, x.type.rank)), keepdim=True)
    y = cx.op("mul", [xs, cx.op("rsqrt", [cx.op("add", [ms, cx.scalar(eps, dt)])])])
    return cx.op("mul", [cx.cast(y, x.type.dtype), scale])


@onnx_op(TABLE, "LpNormalization", 1, 22)
def lp_normalization(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    axis = axis_of(int(node.attr("axis", -1)), x.type.rank, cx)
    p = int(node.attr("p", 2))
    if p == 1:
        norm = cx.op("sum", [cx.op("abs", [x])], axes=(axis,), keepdim=True)
    elif p == 2:
        norm = cx.op("sqrt", [cx.op("sum", [cx.op("mul", [x, x])], axes=(axis,), keepdim=True)])
    else:
        raise cx.error(f"p={p}: LpNormalization takes p = 1 or 2")
    return cx.op("div", [x, norm])


@onnx_op(TABLE, "LRN", 1, 13)
def lrn(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x / (bias + alpha / size * sum of x^2 over the size channels around c) ^ beta``."""
    x = x_of(node)
    dims = static_dims(cx, x, "LRN")
    size = int(node.attr("size"))
    alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = cx.op("mul", [x, x])
    pads = [0, 0] * (len(dims) - 2) + [lo, hi]
    padded = cx.op("pad", [sq], pads=tuple(pads), value=0.0)
    c = dims[1]
    acc = None
    for i in range(size):
        part = cx.op("slice", [padded], axis=1, start=i, end=i + c)
        acc = part if acc is None else cx.op("add", [acc, part])
    assert acc is not None
    dt = x.type.dtype
    scale = cx.op("add", [cx.op("mul", [acc, cx.scalar(alpha / size, dt)]), cx.scalar(bias, dt)])
    return cx.op("div", [x, cx.op("pow", [scale, cx.scalar(beta, dt)])])


@onnx_op(TABLE, "MeanVarianceNormalization", 9, 13)
def mean_variance_normalization(cx: OnnxContext, node: OnnxNode) -> Value:
    """``(x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9)`` over ``axes`` (default 0, 2, 3)."""
    x = x_of(node)
    axes = tuple(axis_of(int(a), x.type.rank, cx) for a in node.attr("axes", [0, 2, 3]))
    mean = cx.op("mean", [x], axes=axes, keepdim=True)
    d = cx.op("sub", [x, mean])
    std = cx.op("sqrt", [cx.op("mean", [cx.op("mul", [d, d])], axes=axes, keepdim=True)])
    return cx.op("div", [d, cx.op("add", [std, cx.scalar(1e-9, x.type.dtype)])])


def _softmax(ir_op: str):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        x = x_of(node)
        rank = x.type.rank
        if node.version >= 13:
            return cx.op(ir_op, [x], axis=axis_of(int(node.attr("axis", -1)), rank, cx))
        # before 13: the input is coerced to 2-D at axis and normalized over the second dim
        axis = axis_of(int(node.attr("axis", 1)), rank, cx)
        dims = static_dims(cx, x, f"{node.op_type}-{node.version}")
        rows = int(np.prod(dims[:axis]))
        flat = cx.op("reshape", [x], shape=(rows, -1))
        return cx.op("reshape", [cx.op(ir_op, [flat], axis=1)], shape=dims)

    return convert


onnx_op(TABLE, "Softmax", 1, 11, 13)(_softmax("softmax"))
onnx_op(TABLE, "LogSoftmax", 1, 11, 13)(_softmax("log_softmax"))


@onnx_op(TABLE, "Hardmax", 1, 11, 13)
def hardmax(cx: OnnxContext, node: OnnxNode) -> Value:
    """1 at the first maximum along ``axis``, else 0."""
    x = x_of(node)
    rank = x.type.rank
    default = -1 if node.version >= 13 else 1
    axis = axis_of(int(node.attr("axis", default)), rank, cx)
    dims = static_dims(cx, x, "Hardmax")
    src = x
    if node.version < 13:
        src = cx.op("reshape", [x], shape=(int(np.prod(dims[:axis])), -1))
        axis = 1
    arg = cx.op("argmax", [src], axis=axis, keepdim=True)
    shape = [1] * src.type.rank
    shape[axis] = int(src.type.shape[axis])  # type: ignore[call-overload]
    classes = cx.constant(np.arange(shape[axis], dtype=np.int64).reshape(shape), "classes")
    hot = cx.cast(cx.op("eq", [arg, classes]), x.type.dtype)
    return cx.op("reshape", [hot], shape=dims) if node.version < 13 else hot


@onnx_op(TABLE, "Dropout", 7, 10, 12, 13, 22)
def dropout(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    x = x_of(node)
    training = node.input(2)
    if training is not None and bool(cx.static(training, "training_mode").reshape(-1)[0]):
        raise cx.error("Dropout in training mode is random; Cuvil imports inference graphs")
    if node.version < 12 and int(node.attr("is_test", 1)) == 0 and node.version < 7:
        raise cx.error("Dropout in training mode")
    mask = (
        cx.constant(np.ones(static_dims(cx, x, "Dropout's mask"), dtype=bool), "mask")
        if node.num_outputs > 1
        else x
    )
    return [x, mask]


__all__ = ["TABLE", "spatial_pads"]
