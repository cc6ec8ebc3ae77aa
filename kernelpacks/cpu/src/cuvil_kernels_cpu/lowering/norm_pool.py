"""Lowering of normalizations (softmax, log_softmax, layer_norm, batch_norm) and pools.

Pools and batch norm work on NHWC storage (an NCHW value is transposed once, and their output
stays NHWC for the next conv); softmax and layer_norm work on rows of the IR layout.
Batch norm computes ``((x - mean) * inv_std) * weight + bias`` with ``inv_std`` precomputed by
the interpreter's own numpy expression, so it is bit-exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_kernels_cpu.lowering import attention
from cuvil_kernels_cpu.lowering.common import FLOAT, INT8, geometry, pads4, same_dtypes
from cuvil_kernels_cpu.lowering.context import LowerContext
from cuvil_kernels_cpu.lowering.conv import _packed
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext


def lower_softmax(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import softmax

    x = node.inputs[0]
    shape = cx.shape(x) or (1,)
    axis = node.attrs["axis"] % len(shape)
    view = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :]))
    out = cx.output(node.outputs[0])
    dst, finish = cx.f32_output(out)
    log = node.op == "log_softmax"
    flops = 5 * math.prod(view)
    if view[2] != 1:  # a middle axis
        src = cx.reshaped(cx.f32(cx.logical(x)), view)
        cx.add(softmax.softmax, [src], [cx.reshaped(dst, view)], algo="softmax",
               static=(log,), flops=flops)  # fmt: skip
        finish()
        return
    rows, n = view[0], view[1]
    recipe = cx.scores.get(node.outputs[0].name) or attention.Scores(x)
    src = cx.reshaped(cx.f32(cx.logical(recipe.source)), (rows, n))
    if recipe.mask is None:
        mask = cx.const_buf(np.ones((1, n), np.bool_), "nomask")
    elif (const := cx.constant(recipe.mask)) is not None:
        mask = _packed(cx, recipe.mask.name, f"mask{shape}",
                       lambda: attention.mask_table(const, shape))  # fmt: skip
    else:
        mrows = math.prod(cx.shape(recipe.mask)) // n
        mask = cx.reshaped(cx.logical(recipe.mask), (mrows, n))
    fill = cx.const_buf(np.array([recipe.fill], np.float32), "fill")
    cx.add(softmax.softmax_scores, [src, mask, fill], [cx.reshaped(dst, (rows, n))],
           algo="softmax", static=(np.float32(recipe.scale), recipe.scale_op, recipe.keep,
                                   recipe.mask is not None, log), flops=flops)  # fmt: skip
    if recipe.absorbed:
        cx.choose({"algorithm": "softmax",
                   "why": "folds " + ", ".join(f"%{a}" for a in recipe.absorbed)})  # fmt: skip
    finish()


def check_softmax(node: Node, cx: CheckContext) -> str | None:
    if any(d == 0 for d in node.inputs[0].type.shape):
        return f"{node.op}: empty tensors not supported"
    return None


def lower_layer_norm(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import norm

    x = node.inputs[0]
    shape = cx.shape(x)
    k = len(node.attrs["normalized_shape"])
    rows, n = math.prod(shape[: len(shape) - k]), math.prod(shape[len(shape) - k :])
    out = cx.output(node.outputs[0])
    dst, finish = cx.f32_output(out)
    params = []
    for i in (1, 2):
        if len(node.inputs) > i:
            params.append(cx.reshaped(cx.f32(cx.logical(node.inputs[i])), (n,)))
        else:
            params.append(cx.const_buf(np.zeros(n, np.float32), "noparam"))
    src = cx.reshaped(cx.f32(cx.logical(x)), (rows, n))
    cx.add(norm.layer_norm, [src, *params], [cx.reshaped(dst, (rows, n))], algo="layer_norm",
           static=(np.float32(node.attrs["eps"]), len(node.inputs) > 1, len(node.inputs) > 2),
           flops=8 * rows * n)  # fmt: skip
    finish()


def check_layer_norm(node: Node, cx: CheckContext) -> str | None:
    if any(d == 0 for d in node.inputs[0].type.shape):
        return "layer_norm: empty tensors not supported"
    return same_dtypes(node)


def check_batch_norm(node: Node, cx: CheckContext) -> str | None:
    if node.inputs[0].type.rank not in (2, 4):
        return "batch_norm: only [N, C] and [N, C, H, W] inputs are supported"
    if any(v.name not in cx.graph.constants for v in node.inputs[1:]):
        return "batch_norm: mean, var, weight and bias must be constants"
    return same_dtypes(node)


def lower_batch_norm(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import norm

    x = node.inputs[0]
    consts = [cx.constant(v) for v in node.inputs[1:]]
    mean, var = (np.asarray(c, np.float32) for c in consts[:2])
    weight = None if len(consts) < 3 else np.asarray(consts[2], np.float32)
    bias = None if len(consts) < 4 else np.asarray(consts[3], np.float32)
    inv_std = 1.0 / np.sqrt(var + np.float32(node.attrs["eps"]))  # the interpreter's expression
    c = mean.shape[0]
    table = np.stack([
        mean, inv_std.astype(np.float32),
        np.ones(c, np.float32) if weight is None else weight,
        np.zeros(c, np.float32) if bias is None else bias,
    ])  # fmt: skip
    flags = (weight is not None, bias is not None)
    nhwc = x.type.rank == 4
    src = cx.nhwc(x) if nhwc else cx.logical(x)
    out = cx.output(node.outputs[0], nhwc=nhwc)
    dst, finish = cx.f32_output(out)
    rows = math.prod(cx.bufs[dst].shape) // c
    tab = cx.const_buf(table, "bn")
    cx.add(norm.batch_norm, [cx.reshaped(cx.f32(src), (rows, c)), tab],
           [cx.reshaped(dst, (rows, c))], algo="batch_norm", static=flags,
           flops=4 * rows * c)  # fmt: skip
    finish()


# --- pooling -------------------------------------------------------------------------------


def check_pool(node: Node, cx: CheckContext) -> str | None:
    if node.inputs[0].type.rank != 4:
        return f"{node.op}: only rank-4 inputs are supported"
    if any(d == 0 for d in node.inputs[0].type.shape):
        return f"{node.op}: empty tensors not supported"
    return None


def _pool_io(node: Node, cx: LowerContext) -> tuple[str, str, Any]:
    nhwc_ir = node.op.endswith("_nhwc")
    x = node.inputs[0]
    src = cx.logical(x) if nhwc_ir else cx.nhwc(x)  # an NHWC op reads the IR array as is
    out = cx.output(node.outputs[0], nhwc=not nhwc_ir)
    return src, out.name, out


def lower_max_pool(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import pool

    a = node.attrs
    src, dst, out = _pool_io(node, cx)
    stride = a["stride"] if a["stride"] is not None else a["kernel"]
    geom = geometry(a["kernel"], stride, a["padding"], a["dilation"])
    dt = out.dtype
    fill = dt.type(-np.inf) if dt.kind == "f" else dt.type(np.iinfo(dt).min)
    if dt.kind == "f" and dt != np.float32:
        fill = np.float32(-np.inf)
        src = cx.f32(src)
        dst, finish = cx.f32_output(out)
    else:
        finish = None
    kernel = pool.max_pool_f32 if dt.kind == "f" else pool.max_pool
    cx.add(kernel, [src], [dst], algo="max_pool", static=(geom, fill))
    if finish:
        finish()


def lower_avg_pool(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import pool

    a = node.attrs
    src, _, out = _pool_io(node, cx)
    dst, finish = cx.f32_output(out)
    stride = a["stride"] if a["stride"] is not None else a["kernel"]
    geom = geometry(a["kernel"], stride, a["padding"], (1, 1))
    p = pads4(a["padding"])
    divisor = a["divisor_override"] or 0
    cx.add(pool.avg_pool, [cx.f32(src)], [dst], algo="avg_pool",
           static=(geom, np.array(p[2:], np.int64), bool(a["count_include_pad"]), int(divisor)))
    finish()


def lower_adaptive_avg(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import pool

    src, _, out = _pool_io(node, cx)
    dst, finish = cx.f32_output(out)
    cx.add(pool.adaptive_avg_pool, [cx.f32(src)], [dst], algo="adaptive_avg_pool")
    finish()


ENTRIES: dict[str, tuple[Any, ...]] = {
    "softmax": (lower_softmax, FLOAT, check_softmax),
    "log_softmax": (lower_softmax, FLOAT, check_softmax),
    "layer_norm": (lower_layer_norm, FLOAT, check_layer_norm),
    "batch_norm": (lower_batch_norm, FLOAT, check_batch_norm),
    "max_pool2d": (lower_max_pool, FLOAT | INT8, check_pool),
    "max_pool2d_nhwc": (lower_max_pool, FLOAT | INT8, check_pool),
    "avg_pool2d": (lower_avg_pool, FLOAT, check_pool),
    "avg_pool2d_nhwc": (lower_avg_pool, FLOAT, check_pool),
    "adaptive_avg_pool2d": (lower_adaptive_avg, FLOAT, check_pool),
    "adaptive_avg_pool2d_nhwc": (lower_adaptive_avg, FLOAT, check_pool),
}
