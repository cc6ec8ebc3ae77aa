"""Lowering of ``linear``, ``fused_linear``, ``matmul`` and ``fused_matmul``.

A constant right operand (a layer's weight) is packed once and multiplied with
:func:`cuvil_kernels_cpu.kernels.gemm.conv_gemm` (a GEMM is a 1x1 convolution over rows); two
activations (attention) are multiplied with :mod:`cuvil_kernels_cpu.kernels.bmm`, the right
one packed per call. Either way the epilogue (bias, activation, residual) is fused.
"""

from __future__ import annotations

import math

import numpy as np

from cuvil_kernels_cpu.lowering.common import epilogue_check, epilogue_of, same_dtypes
from cuvil_kernels_cpu.lowering.context import LowerContext, strided_view
from cuvil_kernels_cpu.lowering.conv import _packed
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext

_GEOM_1X1 = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.int64)


def check_linear(node: Node, cx: CheckContext) -> str | None:
    reason = epilogue_check(node) or same_dtypes(node)
    if reason:
        return reason
    if node.inputs[0].type.rank == 0:
        return f"{node.op}: a 0-d input is not supported"
    for v in node.inputs[1:3]:
        if v.name not in cx.graph.constants:
            return f"{node.op}: weight and bias must be constants (packed at lowering)"
    return None


def check_matmul(node: Node, cx: CheckContext) -> str | None:
    a, b = node.inputs[0].type, node.inputs[1].type
    if a.rank < 2 or b.rank < 2:
        return f"{node.op}: 1-D operands not supported (both must be at least 2-D)"
    reason = epilogue_check(node) or same_dtypes(node)
    if reason:
        return reason
    if b.rank > 2 or node.inputs[1].name not in cx.graph.constants:
        abatch, bbatch = tuple(a.shape[:-2]), tuple(b.shape[:-2])
        if b.rank > 2 and abatch != bbatch:
            return f"{node.op}: batch dims {abatch} and {bbatch} must be equal (no broadcasting)"
    if node.op == "fused_matmul":
        bias, n = node.inputs[2].type, b.shape[-1]
        if node.inputs[2].name not in cx.graph.constants:
            return "fused_matmul: the bias must be a constant"
        if bias.rank == 0 or bias.shape[-1] != n or any(d != 1 for d in bias.shape[:-1]):
            return "fused_matmul: bias must be [N] (one value per output column)"
    return None


def _residual(cx: LowerContext, node: Node, shape: tuple[int, ...]) -> str:
    if node.op.startswith("fused_") and node.attrs["has_residual"]:
        return cx.reshaped(cx.f32(cx.logical(node.inputs[3])), shape)
    return cx.const_buf(np.zeros((1,) * len(shape), np.float32), "nores")


def lower_linear(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import gemm

    x, w = node.inputs[0], node.inputs[1]
    weight = cx.constant(w)
    assert weight is not None
    bias = cx.constant(node.inputs[2]) if len(node.inputs) > 2 else None
    nout, k = weight.shape
    out = cx.output(node.outputs[0])
    dst, finish = cx.f32_output(out)
    m = int(np.prod(out.shape[:-1], dtype=np.int64))
    wp = _packed(cx, w.name, "linear", lambda: gemm.pack_weights(np.asarray(weight).T))
    bname = node.inputs[2].name if bias is not None else f"{w.name}.nobias"
    bb = _packed(cx, bname, f"linb{nout}", lambda: gemm.pack_bias(bias, 1, nout))
    xin = cx.reshaped(cx.f32(cx.logical(x)), (1, 1, m, k))
    res = _residual(cx, node, (1, 1, m, nout))
    lo, hi, act, res_mode = epilogue_of(node).args()
    threads = int(cx.options["threads"])
    mb, pg, kc = gemm.plan_gemm(m, k, cx.bufs[wp].shape[1], threads)
    cx.add(gemm.conv_gemm, [xin, wp, bb, res], [cx.reshaped(dst, (1, 1, m, nout))], algo="gemm",
           static=(_GEOM_1X1, lo, hi, act, res_mode, True, mb, pg, kc),
           flops=2 * m * nout * k)  # fmt: skip
    finish()


def lower_matmul(node: Node, cx: LowerContext) -> None:
    a, b = node.inputs[0], node.inputs[1]
    out = cx.output(node.outputs[0])
    dst, finish = cx.f32_output(out)
    ashape, bshape = cx.shape(a), cx.shape(b)
    m, k, n = ashape[-2], ashape[-1], bshape[-1]
    bconst = cx.constant(b)
    bias = cx.constant(node.inputs[2]) if node.op == "fused_matmul" else None
    lo, hi, act, res_mode = epilogue_of(node).args()
    threads = int(cx.options["threads"])
    if bconst is not None and (b.type.rank == 2 or math.prod(bshape[:-2]) == 1):
        from cuvil_kernels_cpu.kernels import gemm

        rows = math.prod(ashape[:-1])
        w2 = np.asarray(bconst).reshape(k, n)
        wp = _packed(cx, b.name, "matmul", lambda: gemm.pack_weights(w2))
        bb = _packed(cx, node.inputs[2].name if bias is not None else f"{b.name}.nobias",
                     f"mmb{n}", lambda: gemm.pack_bias(None if bias is None else bias.reshape(n),
                                                       1, n))  # fmt: skip
        xin = cx.reshaped(cx.f32(cx.logical(a)), (1, 1, rows, k))
        res = _residual(cx, node, (1, 1, rows, n))
        mb, pg, kc = gemm.plan_gemm(rows, k, cx.bufs[wp].shape[1], threads)
        cx.add(gemm.conv_gemm, [xin, wp, bb, res], [cx.reshaped(dst, (1, 1, rows, n))],
               algo="gemm",
               static=(_GEOM_1X1, lo, hi, act, res_mode, True, mb, pg, kc),
               flops=2 * rows * n * k)  # fmt: skip
        cx.choose({"algorithm": "gemm", "why": "constant right operand, packed once"})
        finish()
        return
    from cuvil_kernels_cpu.kernels import bmm, gemm

    batch = math.prod(ashape[:-2])
    if len(bshape) == 2:  # one right operand for every batch: fold the batch into rows
        a3 = cx.reshaped(cx.f32(cx.logical(a)), (1, batch * m, k))
        b3 = cx.reshaped(cx.f32(cx.logical(b)), (1, k, n))
        rows, nb = batch * m, 1
    else:
        a3 = cx.reshaped(cx.f32(cx.logical(a)), (batch, m, k))
        b3 = cx.reshaped(cx.f32(cx.logical(b)), (batch, k, n))
        rows, nb = m, batch
    packed = cx.fresh(f"{node.outputs[0].name}.rhs")
    cx.new(packed, bmm.packed_rhs_shape(nb, k, n), np.float32)
    if (view := cx.bufs[b3]).permuted is not None:  # a transpose read in place (lowering.views)
        assert view.base is not None
        steps = strided_view(np.zeros(1, np.float32), view.permuted, (nb, k, n)).strides
        flat = cx.reshaped(view.base, (math.prod(view.permuted[0]),))
        strides = tuple(s // 4 for s in steps)
    else:
        flat, strides = cx.reshaped(b3, (nb * k * n,)), (k * n, n, 1)
    cx.add(bmm.pack_rhs, [flat], [packed], algo="pack", static=(k, n, *strides))
    bb = cx.const_buf(gemm.pack_bias(None if bias is None else bias.reshape(n), 1, n), "bias")
    res = _residual(cx, node, (nb, rows, n))
    mb, _ = gemm.plan_items(rows, k, 1, threads)
    cx.add(bmm.bmm, [a3, packed, bb, res], [cx.reshaped(dst, (nb, rows, n))], algo="bmm",
           static=(lo, hi, act, res_mode, mb), flops=2 * nb * rows * n * k)  # fmt: skip
    cx.choose({"algorithm": "bmm", "why": "two activations: right operand packed per call"})
    finish()
