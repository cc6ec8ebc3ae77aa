"""Lowering of ``conv2d`` and ``fused_conv2d`` (NCHW or NHWC IR) to the NHWC float kernels.

Per layer the algorithm is one of

* ``depthwise``: one input channel per group (``groups == C == O``), the direct kernel;
* ``gemm``: 1x1, stride 1, no padding, one group -- the input rows are the GEMM's A, no copy;
* ``winograd``: 3x3, stride 1, no dilation, one group, when :mod:`cuvil_kernels_cpu.algo`
  finds it cheaper (measured or modelled) than im2col;
* ``im2col``: everything else (any stride, padding, dilation, groups), im2col rows gathered
  per block of output pixels into L2 and multiplied on the register tile.

The choice, the candidates' costs and how they were obtained go into the report
(``cm.report()["metrics"]["layers"]``). Weights are packed once, here, for the chosen kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_kernels_cpu import algo
from cuvil_kernels_cpu.lowering.common import (
    epilogue_check,
    epilogue_of,
    geometry,
    pads4,
    same_dtypes,
)
from cuvil_kernels_cpu.lowering.context import LowerContext, aligned
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext

#: Largest im2col matrix gathered once into a scratch buffer (then read by every panel group).
MATERIALIZE_BYTES = 32 << 20
_GEOM_1X1 = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.int64)


def check(node: Node, cx: CheckContext) -> str | None:
    reason = epilogue_check(node) or same_dtypes(node)
    if reason:
        return reason
    if node.inputs[0].type.rank != 4:
        return f"{node.op}: only rank-4 inputs are supported"
    if node.inputs[1].name not in cx.graph.constants:
        return f"{node.op}: the weight must be a constant (it is packed once at lowering)"
    if len(node.inputs) > 2 and node.inputs[2].name not in cx.graph.constants:
        return f"{node.op}: the bias must be a constant"
    return None


def lower(node: Node, cx: LowerContext) -> None:
    from cuvil_kernels_cpu.kernels import depthwise, gather, gemm

    a = node.attrs
    x, w = node.inputs[0], node.inputs[1]
    nhwc_ir = a.get("data_layout", "NCHW") == "NHWC"
    weight = cx.constant(w)
    assert weight is not None
    bias = cx.constant(node.inputs[2]) if len(node.inputs) > 2 else None
    groups = int(a["groups"])
    o, cg, kh, kw = weight.shape
    stride, dilation, padding = tuple(a["stride"]), tuple(a["dilation"]), tuple(a["padding"])
    epi = epilogue_of(node)
    out = cx.output(node.outputs[0], nhwc=not nhwc_ir)
    xin = cx.f32(cx.logical(x) if nhwc_ir else cx.nhwc(x))
    if epi.res_mode:
        r = node.inputs[3]
        res = cx.f32(cx.logical(r) if nhwc_ir else cx.nhwc(r))
    else:
        res = cx.const_buf(np.zeros((1, 1, 1, 1), np.float32), "nores")
    dst, finish = cx.f32_output(out)
    n, oh, ow, _ = cx.bufs[dst].shape
    c = cg * groups
    m = n * oh * ow
    flops = 2 * m * o * cg * kh * kw
    geom = geometry((kh, kw), stride, padding, dilation)
    lo, hi, act, res_mode = epi.args()
    threads = int(cx.options["threads"])
    if groups == c and cg == 1 and o == c:
        wpk = _packed(cx, w.name, "dw", lambda: depthwise.pack_depthwise(weight))
        bb = _packed(cx, f"{w.name}.bias", "dwb", lambda: _bias(bias, o))
        if c % 16 == 0:
            from cuvil_kernels_cpu.kernels import depthwise_tiled

            # The border pixels are computed apart, so the input is read in place (no padding).
            geom9 = np.append(geom, np.int64(np.isfinite(weight).all()))  # finite weights?
            cx.add(depthwise_tiled.depthwise_tiled, [xin, wpk, bb, res], [dst], algo="depthwise",
                   static=(geom9, lo, hi, act, res_mode), flops=flops)  # fmt: skip
            cx.choose({"algorithm": "depthwise", "why": "one input channel per group; "
                       "register tile over 6 pixels x 64 channels"})  # fmt: skip
        else:
            cx.add(depthwise.depthwise, [xin, wpk, bb, res], [dst], algo="depthwise",
                   static=(geom, lo, hi, act, res_mode), flops=flops)  # fmt: skip
            cx.choose({"algorithm": "depthwise", "why": "one input channel per group"})
        finish()
        return
    direct = (kh, kw) == (1, 1) and stride == (1, 1) and max(padding) == 0 and groups == 1
    h, wd = cx.bufs[xin].shape[1], cx.bufs[xin].shape[2]
    direct_ok = groups == 1 and dilation[1] == 1 and kh == kw
    nchw = _layout_step_source(cx, xin)
    in_place = direct_ok and not direct and nchw is None and _in_place(o, weight)
    shape = {"n": n, "c": c, "h": h, "w": wd, "o": o, "oh": oh, "ow": ow, "k": kh,
             "copy": int(not in_place)}  # fmt: skip
    choice = algo.choose_conv(
        shape, direct, _winograd_ok(kh, kw, stride, dilation, groups, c), cx.options,
        direct_ok=direct_ok,
    )  # fmt: skip
    cx.choose(choice)
    if choice["algorithm"] == "winograd":
        from cuvil_kernels_cpu.lowering import winograd_conv

        winograd_conv.lower(cx, w.name, weight, bias, xin, res, dst, padding, epi, flops)
        finish()
        return
    wpk = _packed(
        cx, w.name, f"gemm{groups}",
        lambda: gemm.pack_weights(gemm.conv_weight_kn(weight, groups), groups),
    )  # fmt: skip
    bb = _packed(cx, f"{w.name}.bias", f"gemmb{groups}",
                 lambda: gemm.pack_bias(bias, groups, o // groups))  # fmt: skip
    k = cg * kh * kw
    npanels = cx.bufs[wpk].shape[1]
    if choice["algorithm"] == "direct":
        from cuvil_kernels_cpu.kernels import direct as dk

        p4 = pads4(padding)
        if in_place:
            xsrc, pads = xin, (p4[0], p4[1])
        else:
            xsrc, pads = cx.fresh(f"{node.outputs[0].name}.pad"), (0, 0)
            cx.new(xsrc, dk.padded_shape(n, c, kh, kw, stride, dilation[0], p4, h, wd, oh, ow),
                   np.float32)  # fmt: skip
            if nchw is not None:
                from cuvil_kernels_cpu.kernels import layout

                # The NCHW->NHWC step feeds only this layer: transpose straight into the padding.
                cx.steps.pop()
                cx.add(layout.pad_from_nchw, [nchw], [xsrc], algo="pad", static=(p4[0], p4[1]))
            else:
                cx.add(gather.pad_nhwc, [xin], [xsrc], algo="pad", static=(p4[0], p4[1]))
        rows, pgd = dk.plan_rows(n, oh, ow, k, npanels, threads)
        dgeom = np.array([kh, kw, stride[0], stride[1], dilation[0], *pads], np.int64)
        cx.add(dk.conv_direct, [xsrc, wpk, bb, res], [dst], algo="direct",
               static=(dgeom, lo, hi, act, res_mode, rows, pgd, dk.k_block(kh, kw * c)),
               flops=flops)  # fmt: skip
        finish()
        return
    mb, pg, kc = gemm.plan_gemm(m, k, npanels * groups, threads)
    if not direct and groups == 1 and pg < npanels and m * k * 4 <= MATERIALIZE_BYTES:
        # Several panel groups would each gather the same rows: gather them once instead.
        cols = cx.fresh(f"{node.outputs[0].name}.cols")
        cx.new(cols, (1, 1, m, k), np.float32)
        cx.add(gather.im2col, [xin], [cx.reshaped(cols, (m, k))], algo="im2col-gather",
               static=(geom, oh, ow))  # fmt: skip
        xin, geom, direct = cols, _GEOM_1X1, True
        cx.choices[node.outputs[0].name]["gathered_once"] = True
    cx.add(gemm.conv_gemm, [xin, wpk, bb, res], [dst], algo=choice["algorithm"],
           static=(geom, lo, hi, act, res_mode, direct, mb, pg, kc),
           flops=flops)  # fmt: skip
    finish()


def _layout_step_source(cx: LowerContext, xin: str) -> str | None:
    """The NCHW buffer behind ``xin`` when the last step is the layout kernel writing ``xin``
    (a network input's permute) and no other node or output reads ``xin``; else None."""
    from cuvil_kernels_cpu.kernels import layout

    if not cx.steps:
        return None
    last = cx.steps[-1]
    if last.fn is not layout.nchw_to_nhwc or last.writes != [xin]:
        return None
    users = cx.graph.users().get(xin, [])
    if len(users) != 1 or any(v.name == xin for v in cx.graph.outputs):
        return None
    return last.args[0]


def _in_place(o: int, weight: np.ndarray) -> bool:
    """Whether the direct kernel reads its input in place: its tiles then skip the taps that
    fall in the padding (:mod:`cuvil_kernels_cpu.kernels.direct`) instead of reading a padded
    copy -- the same sums bit for bit, one copy of the input fewer (9-24 % of a ResNet layer's
    time, measured 2026-12-05). Needs panels of the full tile width (the narrow panels' tiles
    read past the row) and finite weights (a padding tap times an infinite weight is NaN)."""
    from cuvil_kernels_cpu.kernels.isa import NR

    return o % NR == 0 and bool(np.isfinite(weight).all())


def _winograd_ok(kh: int, kw: int, stride: tuple, dilation: tuple, groups: int, c: int) -> bool:
    from cuvil_kernels_cpu.kernels.winograd import MIN_CHANNELS

    square = (kh, kw) == (3, 3) and stride == (1, 1) and dilation == (1, 1)
    return square and groups == 1 and c >= MIN_CHANNELS


def _bias(bias: np.ndarray | None, o: int) -> np.ndarray:
    return np.zeros(o, np.float32) if bias is None else np.asarray(bias, np.float32)


def _packed(cx: LowerContext, name: str, kind: str, make: Any) -> str:
    """A constant buffer made once per weight and kind (shared by every shape signature)."""
    key = (name, kind)
    if key not in cx.packed:
        cx.packed[key] = aligned(make())  # aligned once: const_buf then copies nothing
    return cx.const_buf(cx.packed[key], f"{name}.{kind}")
