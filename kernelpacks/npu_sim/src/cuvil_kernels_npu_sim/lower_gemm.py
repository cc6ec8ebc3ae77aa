"""Emit double-buffered GEMM programs for convolution-shaped layers (the engine behind
`lower_qconv2d`, `lower_qlinear` and `lower_qmatmul`).

Data layout. Activations are NHWC in DRAM and in the input scratchpad; an input tile is a dense
[rows][cols][ci_t] box with zero-point padding inserted by LOAD. A weight tile is a dense
[kh][kw][ci_t][co_t] box, so one GEMM micro-op per kernel row reduces over K = kw * ci_t (the kw
taps of one row are `g_ko` runs of `g_ki` contiguous channels, `g_kos` apart; this also covers
dilation), streaming M = oh_t * ow_t output pixels through the array. After the last reduction
step, one ALU REQUANT adds the bias and applies the per-channel multiplier/shift tables and the
clamp (fused relu/relu6), and STORE narrows to int8.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_kernels_npu_sim.builder import Builder, Pipeline
from cuvil_kernels_npu_sim.isa import AluOp, DType, Mem, Op, Src
from cuvil_kernels_npu_sim.tiling import ConvGeometry, ConvTiling


@dataclass(frozen=True)
class GemmProblem:
    """One dense problem: where its input, weights, tables and output live in DRAM."""

    x_off: int  # DRAM byte offset of image 0, pixel (0, 0), channel 0 of the whole tensor
    x_channels: int  # channels per pixel in DRAM (pixel stride)
    x_c0: int  # first input channel of this problem
    y_off: int
    y_channels: int
    y_c0: int
    w_kind: str  # "const": pre-tiled blocks; "act": a row-major [K, N] activation
    w_off: int  # const: base of this problem's blocks; act: offset of B
    w_row: int  # act: N (bytes per row of B)
    tbl_off: int  # [bias, M, shift] int32 per output channel, per co tile block
    key: int  # identifies the problem (resident-buffer keys)


@dataclass(frozen=True)
class Epilogue:
    x_zp: int
    w_zp: int
    out_zp: int
    qmin: int
    qmax: int


def weight_block_offsets(g: ConvGeometry, t: ConvTiling) -> dict[tuple[int, int], int]:
    """Relative offsets of the (co0, ci0) weight blocks, each [kh][kw][ci_len][co_len]."""
    offsets, pos = {}, 0
    for co0 in range(0, g.cout, t.co_t):
        for ci0 in range(0, g.cin, t.ci_t):
            offsets[(co0, ci0)] = pos
            pos += g.kh * g.kw * min(t.ci_t, g.cin - ci0) * min(t.co_t, g.cout - co0)
    return offsets


def emit_gemm_layer(
    b: Builder, g: ConvGeometry, t: ConvTiling, problems: list[GemmProblem], ep: Epilogue
) -> None:
    cfg = b.cfg
    inp_half, wgt_half = cfg.inp_bytes // 2, cfg.wgt_bytes // 2
    acc_half, tbl_half = cfg.acc_words // 2, cfg.tbl_words // 2
    blocks = weight_block_offsets(g, t)
    spatial = [
        (n, oh0, min(t.oh_t, g.oh - oh0), ow0, min(t.ow_t, g.ow - ow0))
        for n in range(g.batch)
        for oh0 in range(0, g.oh, t.oh_t)
        for ow0 in range(0, g.ow, t.ow_t)
    ]
    cos = [(c0, min(t.co_t, g.cout - c0)) for c0 in range(0, g.cout, t.co_t)]
    cis = [(c0, min(t.ci_t, g.cin - c0)) for c0 in range(0, g.cin, t.ci_t)]
    steps = []
    for p in problems:
        outer = (
            [(sp, co) for co in cos for sp in spatial]
            if t.order == "weights_outer"
            else [(sp, co) for sp in spatial for co in cos]
        )
        steps += [(p, sp, co, j, ci) for sp, co in outer for j, ci in enumerate(cis)]
    n_tiles = len(steps) // len(cis)
    pipe = Pipeline(b, len(steps), n_tiles)
    resident: dict[str, object] = {}
    slots = {"inp": 1, "wgt": 1, "tbl": 1}
    tile = -1

    def need(name: str, key: object) -> bool:
        if resident.get(name) == key:
            return False
        resident[name] = key
        slots[name] ^= 1
        return True

    for k, (p, (n, oh0, oh_len, ow0, ow_len), (co0, co_len), j, (ci0, ci_len)) in enumerate(steps):
        first, last = j == 0, j == len(cis) - 1
        tile += first
        ih0, iw0 = oh0 * g.sh - g.ph, ow0 * g.sw - g.pw
        ih_len, iw_len = g.in_rows(oh_len), g.in_cols(ow_len)
        with pipe.load(k):
            if need("inp", (p.key, n, oh0, ow0, ci0)):
                lo_h, hi_h = max(ih0, 0), min(ih0 + ih_len, g.h)
                lo_w, hi_w = max(iw0, 0), min(iw0 + iw_len, g.w)
                pads = (lo_h - ih0, ih0 + ih_len - hi_h, lo_w - iw0, iw0 + iw_len - hi_w)
                if max(pads) > 7 or hi_h <= lo_h or hi_w <= lo_w:
                    raise ValueError(
                        f"{b.name}: padding {pads} per tile side is not supported "
                        "(LOAD pads at most 7 and needs one real row/column)"
                    )
                b.set(ld_ystride=g.w * p.x_channels, ld_xstride=p.x_channels, ld_pad=ep.x_zp)
                dram = p.x_off + ((n * g.h + lo_h) * g.w + lo_w) * p.x_channels + p.x_c0 + ci0
                b.emit(
                    Op.LOAD,
                    mem=Mem.INP,
                    dtype=DType.I8,
                    sram=slots["inp"] * inp_half,
                    dram=dram,
                    y=hi_h - lo_h,
                    x=hi_w - lo_w,
                    c=ci_len,
                    pt=pads[0],
                    pb=pads[1],
                    pl=pads[2],
                    pr=pads[3],
                )
            if need("wgt", (p.key, co0, ci0)):
                if p.w_kind == "const":
                    b.set(ld_ystride=ci_len * co_len, ld_xstride=co_len)
                    b.emit(
                        Op.LOAD,
                        mem=Mem.WGT,
                        dtype=DType.I8,
                        sram=slots["wgt"] * wgt_half,
                        dram=p.w_off + blocks[(co0, ci0)],
                        y=g.kh * g.kw,
                        x=ci_len,
                        c=co_len,
                    )
                else:
                    b.set(ld_ystride=ci_len * p.w_row, ld_xstride=p.w_row)
                    b.emit(
                        Op.LOAD,
                        mem=Mem.WGT,
                        dtype=DType.I8,
                        sram=slots["wgt"] * wgt_half,
                        dram=p.w_off + ci0 * p.w_row + co0,
                        y=1,
                        x=ci_len,
                        c=co_len,
                    )
            if need("tbl", (p.key, co0)):
                b.set(ld_ystride=0, ld_xstride=0)
                b.emit(
                    Op.LOAD,
                    mem=Mem.TBL,
                    dtype=DType.I32,
                    sram=slots["tbl"] * tbl_half,
                    dram=p.tbl_off + 12 * co0,
                    y=1,
                    x=1,
                    c=3 * co_len,
                )
        acc = (tile % 2) * acc_half
        with pipe.compute(k, tile, first, last):
            inp, wgt = slots["inp"] * inp_half, slots["wgt"] * wgt_half
            b.set(
                g_ki=ci_len,
                g_ko=g.kw,
                g_kos=g.dw * ci_len,
                g_n=co_len,
                g_izp=ep.x_zp,
                g_wzp=ep.w_zp,
            )
            uop = b.uop_block(
                [
                    (acc, inp + r * g.dh * iw_len * ci_len, wgt + r * g.kw * ci_len * co_len)
                    for r in range(g.kh)
                ]
            )
            b.emit(
                Op.GEMM,
                reset=int(first),
                uop=uop,
                nuop=g.kh,
                e0=oh_len,
                e1=ow_len,
                is0=g.sh * iw_len * ci_len,
                is1=g.sw * ci_len,
                as0=ow_len * co_len,
                as1=co_len,
            )
            if last:
                b.set(a_cols=co_len, a_zp=ep.out_zp, a_lo=ep.qmin, a_hi=ep.qmax)
                uop = b.uop_block([(acc, slots["tbl"] * tbl_half, 0)])
                b.emit(
                    Op.ALU,
                    aluop=AluOp.REQUANT,
                    src=Src.TBL,
                    uop=uop,
                    nuop=1,
                    e0=oh_len,
                    e1=ow_len,
                    ds0=ow_len * co_len,
                    ds1=co_len,
                )
        if last:
            with pipe.store(tile):
                b.set(st_ystride=g.ow * p.y_channels, st_xstride=p.y_channels)
                dram = p.y_off + ((n * g.oh + oh0) * g.ow + ow0) * p.y_channels + p.y_c0 + co0
                b.emit(
                    Op.STORE,
                    mem=Mem.ACC,
                    dtype=DType.I8,
                    sram=acc,
                    dram=dram,
                    y=oh_len,
                    x=ow_len,
                    c=co_len,
                )
    pipe.finish()
