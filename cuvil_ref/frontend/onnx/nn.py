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
from cuvil_ref.frontend.onnx.shape import axis_of, select, static_dims, x_of
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
def batch_norm(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """Inference: the running statistics. ``training_mode=1``: the batch's own mean and
    (biased) variance normalize, and the running statistics come back updated:
    ``running * momentum + batch * (1 - momentum)``."""
    x, scale, bias, mean, var = node.inputs[:5]
    assert x is not None and mean is not None and var is not None
    eps = float(node.attr("epsilon", 1e-5))
    if not int(node.attr("training_mode", 0)):
        return [cx.op("batch_norm", [x, mean, var, scale, bias], eps=eps)]  # type: ignore[list-item]
    axes = (0, *range(2, x.type.rank))
    batch_mean = cx.op("mean", [x], axes=axes)
    d = cx.op("sub", [x, cx.op("mean", [x], axes=axes, keepdim=True)])
    batch_var = cx.op("mean", [cx.op("mul", [d, d])], axes=axes)
    y = cx.op("batch_norm", [x, batch_mean, batch_var, scale, bias], eps=eps)  # type: ignore[list-item]
    m = float(node.attr("momentum", 0.9))
    dt = x.type.dtype

    def update(running: Value, batch: Value) -> Value:
        kept = cx.op("mul", [running, cx.scalar(m, dt)])
        return cx.op("add", [kept, cx.op("mul", [batch, cx.scalar(1 - m, dt)])])

    return [y, update(mean, batch_mean), update(var, batch_var)]


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
    zero = cx.scalar(0, x.type.dtype)
    # a zero norm gives 0, not 0/0 (ONNX's reference)
    return cx.op("where", [cx.op("eq", [norm, zero]), zero, cx.op("div", [x, norm])])


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
        ratio = node.input(1)
        # ratio 0 keeps every element: the one training-mode Dropout that is not random
        if ratio is None or float(cx.static(ratio, "ratio").reshape(-1)[0]) != 0.0:
            raise cx.error("Dropout in training mode is random; Cuvil imports inference graphs")
    if node.version < 12 and int(node.attr("is_test", 1)) == 0 and node.version < 7:
        raise cx.error("Dropout in training mode")
    mask = (
        cx.constant(np.ones(static_dims(cx, x, "Dropout's mask"), dtype=bool), "mask")
        if node.num_outputs > 1
        else x
    )
    return [x, mask]


#: Largest matrix ``Det`` expands (n! products of n elements).
DET_LIMIT = 6


@onnx_op(TABLE, "Det", 11, 22)
def det(cx: OnnxContext, node: OnnxNode) -> Value:
    """Determinants of the trailing ``n x n`` matrices by the Leibniz formula, the sum over
    the permutations ``s`` of ``sign(s) * prod_i A[i, s(i)]`` (exact in its terms, for the small
    matrices it is meant for: ``n`` at most ``DET_LIMIT``)."""
    from itertools import permutations

    x = x_of(node)
    dims = static_dims(cx, x, "Det")
    n = dims[-1]
    if dims[-2] != n:
        raise cx.error(f"Det of {dims[-2]}x{n} matrices: they must be square")
    if n > DET_LIMIT:
        raise cx.error(f"Det of {n}x{n} matrices: Cuvil expands at most {DET_LIMIT}x{DET_LIMIT}")
    perms = list(permutations(range(n)))
    signs = []
    for p in perms:
        inversions = sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n))
        signs.append(-1.0 if inversions % 2 else 1.0)
    index = np.array([i * n + p[i] for p in perms for i in range(n)], dtype=np.int64)
    batch = dims[:-2]
    flat = cx.op("reshape", [x], shape=(*batch, n * n))
    terms = select(cx, flat, len(batch), index)
    terms = cx.op("reshape", [terms], shape=(*batch, len(perms), n))
    products = cx.op("prod", [terms], axes=(len(batch) + 1,))
    sign = cx.constant(np.array(signs, dtype=x.type.dtype.numpy), "signs")
    return cx.op("sum", [cx.op("mul", [products, sign])], axes=(len(batch),))


__all__ = ["TABLE", "spatial_pads"]
