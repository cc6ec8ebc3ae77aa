"""Emit double-buffered GEMM programs for convolution-shaped layers (the engine behind
`lower_qconv2d`, `lower_qlinear` and `lower_qmatmul`).

Data layout. Activations are NHWC in DRAM and in the input scratchpad; an input tile is a dense
[rows][cols][ci_t] box with zero-point padding inserted by LOAD. A weight tile is a dense
[kh][kw][ci_t][co_t] box. When the kw taps of a kernel row are adjacent pixels (dilation 1), the
whole window is `kh` runs (`g_ko`, `g_kos` = one input-tile row apart) of `kw * ci_t` contiguous
elements (`g_ki`), so one GEMM micro-op reduces over K = kh * kw * ci_t: a 3-channel stem fills
the array rows with taps x channels (im2col order, without copying). With dilation, one micro-op
per kernel row reduces over K = kw * ci_t (`g_ko` = kw runs of ci_t, `g_kos` apart).
Depthwise layers (`geometry.depthwise`) use DWCONV instead: channels on array columns, the
window's taps as the reduction, weight tiles [kh][kw][c_t]; with dilation 1 one micro-op covers
all kh kernel rows (`g_kr`, `g_krs` = one input-tile row) through the line buffer, else one
micro-op per kernel row. M = oh_t * ow_t output pixels
stream through the array. The last reduction step sets `rq=1`: the array's output stage adds the
bias, applies the per-channel multiplier/shift table and the clamp (fused relu/relu6) while the
results drain, and STORE narrows to int8. `loop_unroll_factor` > 1 unrolls each array
instruction's output-row loop into its micro-op body (`unroll.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_kernels_npu_sim.builder import Builder, Pipeline
from cuvil_kernels_npu_sim.isa import AluOp, DType, Mem, Op, Src
from cuvil_kernels_npu_sim.tiling import ConvGeometry, ConvTiling, line_buffered
from cuvil_kernels_npu_sim.unroll import ArrayLoop, unroll_loop


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
class Residual:
    """A qadd fused behind the layer (fusion.py): the requantized output tile stays in the
    accumulator, the other operand's tile is loaded next to it, one ALU REQADD combines them
    and only the sum is stored. `conv_first`: the layer's output is qadd's `a`."""

    skip_off: int  # DRAM offset of the other operand (same layout and shape as the output)
    conv_first: bool
    a_zp: int
    b_zp: int
    m_a: int
    m_b: int
    shift: int
    out_zp: int
    qmin: int
    qmax: int


@dataclass(frozen=True)
class Epilogue:
    x_zp: int
    w_zp: int
    out_zp: int
    qmin: int
    qmax: int


def weight_block_offsets(g: ConvGeometry, t: ConvTiling) -> dict[tuple[int, int], int]:
    """Relative offsets of the (co0, ci0) weight blocks, each [kh][kw][ci_len][co_len]
    (depthwise: one [kh][kw][co_len] block per channel tile, keyed (co0, co0))."""
    offsets, pos = {}, 0
    for co0 in range(0, g.cout, t.co_t):
        co_len = min(t.co_t, g.cout - co0)
        if g.depthwise:
            offsets[(co0, co0)] = pos
            pos += g.kh * g.kw * co_len
            continue
        for ci0 in range(0, g.cin, t.ci_t):
            offsets[(co0, ci0)] = pos
            pos += g.kh * g.kw * min(t.ci_t, g.cin - ci0) * co_len
    return offsets


def emit_gemm_layer(
    b: Builder,
    g: ConvGeometry,
    t: ConvTiling,
    problems: list[GemmProblem],
    ep: Epilogue,
    residual: Residual | None = None,
) -> None:
    """The layer's double-buffered program; with `residual`, accumulator tiles take a quarter
    of ACC each and the other two quarters hold the qadd operand's tiles (the tiler must have
    kept tiles within a quarter: `fused_config`)."""
    cfg = b.cfg
    inp_half, wgt_half = cfg.inp_bytes // 2, cfg.wgt_bytes // 2
    acc_half, tbl_half = cfg.acc_words // (4 if residual else 2), cfg.tbl_words // 2
    blocks = weight_block_offsets(g, t)
    spatial = [
        (n, oh0, min(t.oh_t, g.oh - oh0), ow0, min(t.ow_t, g.ow - ow0))
        for n in range(g.batch)
        for oh0 in range(0, g.oh, t.oh_t)
        for ow0 in range(0, g.ow, t.ow_t)
    ]
    cos = [(c0, min(t.co_t, g.cout - c0)) for c0 in range(0, g.cout, t.co_t)]
    cis = [(c0, min(t.ci_t, g.cin - c0)) for c0 in range(0, g.cin, t.ci_t)]
    n_ci = 1 if g.depthwise else len(cis)
    steps = []
    for p in problems:
        outer = (
            [(sp, co) for co in cos for sp in spatial]
            if t.order == "weights_outer"
            else [(sp, co) for sp in spatial for co in cos]
        )
        for sp, co in outer:  # depthwise: a channel tile reduces over its own input channels
            steps += [(p, sp, co, j, ci) for j, ci in enumerate([co] if g.depthwise else cis)]
    n_tiles = len(steps) // n_ci
    pipe = Pipeline(b, len(steps), n_tiles)
    resident: dict[str, list[object]] = {name: [None, None] for name in ("inp", "wgt", "tbl")}
    slots = {"inp": 1, "wgt": 1, "tbl": 1}
    tile = -1

    def need(name: str, key: object) -> bool:
        """Use the slot holding `key`, else load it into the slot the previous step did not use
        (last used by step k - 2 or earlier, which the buffer-free token orders)."""
        held, cur = resident[name], slots[name]
        if held[cur] == key:
            return False
        slots[name] = 1 - cur
        if held[1 - cur] == key:
            return False
        held[1 - cur] = key
        return True

    def skip_slot(tile: int) -> int:
        return 2 * acc_half + (tile % 2) * acc_half

    for k, (p, (n, oh0, oh_len, ow0, ow_len), (co0, co_len), j, (ci0, ci_len)) in enumerate(steps):
        first, last = j == 0, j == n_ci - 1
        tile += first
        tile_offset = ((n * g.oh + oh0) * g.ow + ow0) * p.y_channels + p.y_c0 + co0
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
                if g.depthwise:
                    b.set(ld_ystride=co_len, ld_xstride=co_len)
                    b.emit(
                        Op.LOAD,
                        mem=Mem.WGT,
                        dtype=DType.I8,
                        sram=slots["wgt"] * wgt_half,
                        dram=p.w_off + blocks[(co0, ci0)],
                        y=1,
                        x=g.kh * g.kw,
                        c=co_len,
                    )
                elif p.w_kind == "const":
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
            if residual is not None and last:  # the qadd operand's tile, next to the output
                b.set(ld_ystride=g.ow * p.y_channels, ld_xstride=p.y_channels)
                b.emit(
                    Op.LOAD, mem=Mem.ACC, dtype=DType.I8, sram=skip_slot(tile),
                    dram=residual.skip_off + tile_offset, y=oh_len, x=ow_len, c=co_len,
                )  # fmt: skip
        acc = (tile % 2) * acc_half
        with pipe.compute(k, tile, first, last):
            inp, wgt = slots["inp"] * inp_half, slots["wgt"] * wgt_half
            b.set(g_izp=ep.x_zp, g_wzp=ep.w_zp, g_n=co_len, g_wdb=int(cfg.weight_double_buffer))
            if last:
                b.set(g_tbl=slots["tbl"] * tbl_half, a_zp=ep.out_zp, a_lo=ep.qmin, a_hi=ep.qmax)
            row = g.dh * iw_len * ci_len  # INP elements between kernel rows
            if g.depthwise and line_buffered(g, cfg):  # all kernel rows via the line buffer
                op = Op.DWCONV
                b.set(g_ki=1, g_ko=g.kw, g_kos=g.dw * ci_len, g_kr=g.kh, g_krs=row)
                uops = [(acc, inp, wgt)]
            elif g.depthwise:
                op, wrow = Op.DWCONV, g.kw * co_len
                b.set(g_ki=1, g_ko=g.kw, g_kos=g.dw * ci_len)
                uops = [(acc, inp + r * row, wgt + r * wrow) for r in range(g.kh)]
            elif g.taps_contiguous:  # the whole window in one micro-op (im2col order)
                op = Op.GEMM
                b.set(g_ki=g.kw * ci_len, g_ko=g.kh, g_kos=row)
                uops = [(acc, inp, wgt)]
            else:  # dilated taps: one micro-op per kernel row
                op, wrow = Op.GEMM, g.kw * ci_len * co_len
                b.set(g_ki=ci_len, g_ko=g.kw, g_kos=g.dw * ci_len)
                uops = [(acc, inp + r * row, wgt + r * wrow) for r in range(g.kh)]
            loop = ArrayLoop(
                e0=oh_len,
                e1=ow_len,
                is0=g.sh * iw_len * ci_len,
                is1=g.sw * ci_len,
                as0=ow_len * co_len,
                as1=co_len,
                uops=tuple(uops),
            )
            for part in unroll_loop(loop, cfg.loop_unroll_factor):
                b.emit(
                    op,
                    reset=int(first),
                    uop=b.uop_block(list(part.uops)),
                    nuop=len(part.uops),
                    e0=part.e0,
                    e1=part.e1,
                    is0=part.is0,
                    is1=part.is1,
                    as0=part.as0,
                    as1=part.as1,
                    rq=int(last),
                )
            if residual is not None and last:
                _emit_residual_add(b, residual, acc, skip_slot(tile), oh_len * ow_len, co_len)
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


def _emit_residual_add(
    b: Builder, r: Residual, acc: int, skip: int, pixels: int, cols: int
) -> None:
    """REQADD over the tile: the requantized layer output (at `acc`) and the other operand
    (at `skip`), in qadd's operand order, one rounding (lower_eltwise.py's rule)."""
    a_zp, b_zp, m_a, m_b = (
        (r.a_zp, r.b_zp, r.m_a, r.m_b) if r.conv_first else (r.b_zp, r.a_zp, r.m_b, r.m_a)
    )
    b.set(
        a_cols=cols, a_zpa=a_zp, a_zpb=b_zp, a_ma=m_a, a_mb=m_b, a_shift=r.shift,
        a_zp=r.out_zp, a_lo=r.qmin, a_hi=r.qmax,
    )  # fmt: skip
    grid = dict(e0=1, e1=pixels, ds0=0, ds1=cols, ss0=0, ss1=cols)
    uop = b.uop_block([(acc, skip, 0)])
    b.emit(Op.ALU, aluop=AluOp.REQADD, src=Src.ACC, uop=uop, nuop=1, **grid)
