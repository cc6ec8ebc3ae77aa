"""Lowering of the int8 ops of docs/semantics.md to the exact kernels.

``qconv2d``/``qlinear`` run on the VNNI tile (:mod:`cuvil_kernels_cpu.kernels.qgemm`),
depthwise ``qconv2d`` on the direct int32 kernel; the boundary and elementwise ops on
:mod:`cuvil_kernels_cpu.kernels.qelem`; ``qmax_pool2d`` on the max-pool kernel (int8 compare).
Broadcasting ``qadd``/``qmul`` operands, per-channel ``quantize``/``dequantize`` and
``qconcat`` (pure data movement plus requantization) run their registered reference, which is
the spec itself. Everything here is bit-exact; nothing is approximated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_kernels_cpu.kernels import isa
from cuvil_kernels_cpu.lowering.common import FLOAT, INT8, dtypes, geometry
from cuvil_kernels_cpu.lowering.context import LowerContext
from cuvil_kernels_cpu.lowering.conv import _packed
from cuvil_kernels_cpu.lowering.elementwise import _operands, _reference
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import get_op
from cuvil_ref.ops.qpool import adaptive_windows, avg_pool_windows
from cuvil_ref.plugin.kit import CheckContext

I8_I32 = dtypes("i8", "i32")


def _per_channel(values: tuple[int, ...], o: int) -> np.ndarray:
    arr = np.asarray(values, np.int64)
    return np.full(o, arr[0], np.int64) if arr.size == 1 else arr


def check_qconv(node: Node, cx: CheckContext) -> str | None:
    if node.inputs[0].type.rank != 4:
        return "qconv2d: only rank-4 inputs are supported"
    if any(v.name not in cx.graph.constants for v in node.inputs[1:]):
        return f"{node.op}: weight and bias must be constants (packed at lowering)"
    return None


def check_qlinear(node: Node, cx: CheckContext) -> str | None:
    if node.inputs[0].type.rank == 0:
        return "qlinear: a 0-d input is not supported"
    if any(v.name not in cx.graph.constants for v in node.inputs[1:]):
        return "qlinear: weight and bias must be constants (packed at lowering)"
    return None


def _requant_args(a: Any, o: int) -> tuple[np.ndarray, np.ndarray]:
    return _per_channel(a["multiplier"], o), _per_channel(a["shift"], o)


def lower_qconv(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import qgemm

    a = node.attrs
    x, w = node.inputs[0], node.inputs[1]
    weight = np.asarray(cx.constant(w))
    bias = cx.constant(node.inputs[2]) if len(node.inputs) > 2 else None
    groups = int(a["groups"])
    o, cg, kh, kw = weight.shape
    out = cx.output(node.outputs[0], nhwc=True)
    xin = cx.nhwc(x)
    geom = geometry((kh, kw), a["stride"], a["padding"], a["dilation"])
    mult, shift = _requant_args(a, o)
    n, oh, ow, _ = out.shape
    flops = 2 * n * oh * ow * o * cg * kh * kw
    c = cg * groups
    if groups == c and cg == 1 and o == c:
        wpk = _packed(cx, w.name, "qdw", lambda: np.ascontiguousarray(
            weight[:, 0].transpose(1, 2, 0)))  # fmt: skip
        b = np.zeros(o, np.int32) if bias is None else np.asarray(bias, np.int32)
        cx.add(qgemm.qdepthwise, [xin, wpk, cx.const_buf(b, "qb"), cx.const_buf(mult, "m"),
                                  cx.const_buf(shift, "s")], [out.name], algo="q-depthwise",
               static=(geom, int(a["x_zp"]), int(a["out_zp"]), int(a["qmin"]), int(a["qmax"])),
               flops=flops)  # fmt: skip
        cx.choose({"algorithm": "q-depthwise", "why": "one input channel per group"})
        return
    w_kn = np.ascontiguousarray(
        weight.reshape(groups, o // groups, cg, kh, kw).transpose(0, 3, 4, 2, 1)
    ).reshape(groups, kh * kw * cg, o // groups)
    _emit_qgemm(cx, node, w.name, w_kn, bias, xin, out.name, geom, mult, shift, flops)


def lower_qlinear(node: Node, cx: LowerContext) -> None:
    a = node.attrs
    x, w = node.inputs[0], node.inputs[1]
    weight = np.asarray(cx.constant(w))
    bias = cx.constant(node.inputs[2]) if len(node.inputs) > 2 else None
    nout, k = weight.shape
    out = cx.output(node.outputs[0])
    m = math.prod(out.shape[:-1])
    xin = cx.reshaped(cx.logical(x), (1, 1, m, k))
    mult, shift = _requant_args(a, nout)
    geom = geometry((1, 1), (1, 1), (0, 0), (1, 1))
    w_kn = np.ascontiguousarray(weight.T)[None]
    dst = cx.reshaped(out.name, (1, 1, m, nout))
    _emit_qgemm(cx, node, w.name, w_kn, bias, xin, dst, geom, mult, shift, 2 * m * nout * k)


def _emit_qgemm(cx: LowerContext, node: Node, wname: str, w_kn: np.ndarray, bias: Any,
                xin: str, dst: str, geom: np.ndarray, mult: np.ndarray, shift: np.ndarray,
                flops: int) -> None:  # fmt: skip
    from cuvil_kernels_cpu.kernels import qgemm

    a = node.attrs
    groups, k, og = w_kn.shape
    x_zp = int(a["x_zp"])
    wp = _packed(cx, wname, "qgemm", lambda: qgemm.pack_weights(w_kn))
    corr = cx.const_buf(qgemm.correction(w_kn, bias, x_zp), "corr")
    n, oh, ow, _ = cx.bufs[dst].shape
    mb, pg = qgemm.plan_items(n * oh * ow, k, cx.bufs[wp].shape[1] * groups,
                              int(cx.options["threads"]))  # fmt: skip
    cx.add(qgemm.qconv_gemm, [xin, wp, corr, cx.const_buf(mult, "m"), cx.const_buf(shift, "s")],
           [dst], algo=_QGEMM_ALGO, flops=flops,
           static=(geom, int(a["out_zp"]), int(a["qmin"]), int(a["qmax"]), x_zp + 128, mb, pg))
    cx.choose({"algorithm": _QGEMM_ALGO, "why": "int8 GEMM on the u8 x s8 tile, exact int32"})


#: The int8 GEMM's name in the report: by the host's tile (kernels/microkernel.py)
_QGEMM_ALGO = "q-vnni" if isa.HAS_VNNI else "q-avx2" if isa.INT8_PAIRS else "q-portable"


# --- boundary and elementwise ------------------------------------------------------------------


def _flat(cx: LowerContext, name: str) -> str:
    return cx.reshaped(name, (math.prod(cx.bufs[name].shape),))


def _reference_step(node: Node, cx: LowerContext) -> None:
    names, nhwc = _operands(node, cx)
    out = cx.output(node.outputs[0], nhwc=nhwc)
    cx.add(_reference, names, [out.name], algo="reference",
           static=(get_op(node.op).reference, dict(node.attrs)))  # fmt: skip


def _reference_logical(node: Node, cx: LowerContext) -> None:
    names = [cx.logical(v) for v in node.inputs]
    out = cx.output(node.outputs[0])
    cx.add(_reference, names, [out.name], algo="reference",
           static=(get_op(node.op).reference, dict(node.attrs)))  # fmt: skip


def lower_boundary(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import qelem

    a = node.attrs
    if a["axis"] is not None:
        _reference_step(node, cx)
        return
    names, nhwc = _operands(node, cx)
    out = cx.output(node.outputs[0], nhwc=nhwc)
    scale, zp = np.float32(a["scale"][0]), int(a["zero_point"][0])
    if node.op == "quantize":
        src = _flat(cx, cx.f32(names[0]))
        cx.add(qelem.quantize, [src], [_flat(cx, out.name)], algo="quantize",
               static=(scale, zp, -128, 127))  # fmt: skip
    else:
        cx.add(qelem.dequantize, [_flat(cx, names[0])], [_flat(cx, out.name)], algo="dequantize",
               static=(scale, zp))  # fmt: skip


def lower_requantize(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import qelem

    a = node.attrs
    names, nhwc = _operands(node, cx)
    out = cx.output(node.outputs[0], nhwc=nhwc)
    cx.add(qelem.requantize, [_flat(cx, names[0])], [_flat(cx, out.name)], algo="requantize",
           static=(int(a["x_zp"]), int(a["multiplier"][0]), int(a["shift"][0]), int(a["out_zp"]),
                   int(a["qmin"]), int(a["qmax"])))  # fmt: skip


def lower_qbinary(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import qelem

    a = node.attrs
    names, nhwc = _operands(node, cx)
    shapes = {cx.bufs[n].shape for n in names}
    if len(shapes) != 1:
        _reference_step(node, cx)
        return
    out = cx.output(node.outputs[0], nhwc=nhwc)
    ins = [_flat(cx, n) for n in names]
    tail = (int(a["out_zp"]), int(a["qmin"]), int(a["qmax"]))
    if node.op == "qadd":
        m_a, m_b = (int(v) for v in a["multiplier"])
        static: tuple[Any, ...] = (int(a["a_zp"]), int(a["b_zp"]), m_a, m_b, int(a["shift"][0]))
        fn = qelem.qadd
    else:
        static = (int(a["a_zp"]), int(a["b_zp"]), int(a["multiplier"][0]), int(a["shift"][0]))
        fn = qelem.qmul
    cx.add(fn, ins, [_flat(cx, out.name)], algo=node.op, static=static + tail, in_place=True)


def lower_qmax_pool(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import pool

    a = node.attrs
    out = cx.output(node.outputs[0], nhwc=True)
    geom = geometry(a["kernel"], a["stride"], a["padding"], a["dilation"])
    cx.add(pool.max_pool, [cx.nhwc(node.inputs[0])], [out.name], algo="max_pool",
           static=(geom, np.int8(-128)))  # fmt: skip


def lower_qavg_pool(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import qelem

    a = node.attrs
    x = node.inputs[0]
    h, w = cx.shape(x)[2:]
    out = cx.output(node.outputs[0], nhwc=True)
    oh, ow = out.shape[1], out.shape[2]
    if node.op == "qavg_pool2d":
        (kh, kw), (sh, sw), p = a["kernel"], a["stride"], a["padding"]
        inc = a["count_include_pad"]
        rows = avg_pool_windows(h, oh, kh, sh, p[0], p[2], inc)
        cols = avg_pool_windows(w, ow, kw, sw, p[1], p[3], inc)
    else:
        rows, cols = adaptive_windows(h, oh), adaptive_windows(w, ow)
    counts = np.outer(rows[2], cols[2])
    table = len(a["multiplier"])
    if counts.size and (counts.min() < 1 or counts.max() > table):
        _reference_step(node, cx)  # the reference raises the spec's error
        return
    r = cx.const_buf(np.stack(rows).astype(np.int64), "rows")
    c = cx.const_buf(np.stack(cols).astype(np.int64), "cols")
    cx.add(qelem.qavg_pool, [cx.nhwc(x), r, c, cx.const_buf(np.asarray(a["multiplier"], np.int64),
           "m"), cx.const_buf(np.asarray(a["shift"], np.int64), "s")], [out.name],
           algo="q-avg-pool",
           static=(int(a["x_zp"]), int(a["out_zp"]), int(a["qmin"]), int(a["qmax"])))  # fmt: skip


ENTRIES: dict[str, tuple[Any, ...]] = {
    "qconv2d": (lower_qconv, INT8, check_qconv),
    "qlinear": (lower_qlinear, INT8, check_qlinear),
    "quantize": (lower_boundary, FLOAT, None),
    "dequantize": (lower_boundary, I8_I32, None),
    "requantize": (lower_requantize, INT8, None),
    "qadd": (lower_qbinary, INT8, None),
    "qmul": (lower_qbinary, INT8, None),
    "qconcat": (_reference_logical, INT8, None),
    "qmax_pool2d": (lower_qmax_pool, INT8, None),
    "qavg_pool2d": (lower_qavg_pool, INT8, None),
    "qadaptive_avg_pool2d": (lower_qavg_pool, INT8, None),
}
