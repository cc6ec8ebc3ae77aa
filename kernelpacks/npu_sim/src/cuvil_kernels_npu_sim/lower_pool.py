"""Pooling on the vector ALU: `lower_qmax_pool2d`, `lower_qavg_pool2d`,
`lower_qadaptive_avg_pool2d`.

An input tile (all columns, `oh_t` output rows, `c_t` channels) is loaded widened into an
accumulator slot with padding inserted by LOAD (-128 for max, so padding never wins; the input
zero point for avg, so that after subtracting `kh * kw * x_zp` padding contributes 0). One ALU
instruction per kernel tap (micro-op loop) MOVs, MAXes or ADDs the shifted window grid into an
output slot. Avg then REQUANTs with M, shift for the window count n; where n varies (edges with
`count_include_pad=False`) one REQUANT per rectangle of equal n. Input and output slots are double
buffered, so loads, ALU work and stores overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from cuvil_kernels_npu_sim.builder import Builder, Pipeline
from cuvil_kernels_npu_sim.config import get_config
from cuvil_kernels_npu_sim.isa import AluOp, DType, Mem, Op, Src
from cuvil_kernels_npu_sim.lower_conv import Target, _check_clamp, _pair
from cuvil_kernels_npu_sim.program import Program
from cuvil_kernels_npu_sim.tiling import ConvGeometry


def _runs(counts: list[int]) -> list[tuple[int, int, int]]:
    """(start, length, value) runs of equal values."""
    runs: list[tuple[int, int, int]] = []
    for i, v in enumerate(counts):
        if runs and runs[-1][2] == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, v)
        else:
            runs.append((i, 1, v))
    return runs


def _window_counts(size: int, out: int, k: int, s: int, p: int, include_pad: bool) -> list[int]:
    if include_pad:
        return [k] * out
    return [min(o * s - p + k, size) - max(o * s - p, 0) for o in range(out)]


def avg_pool_counts(
    x_shape: Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    count_include_pad: bool = True,
) -> list[int]:
    """The window element counts n an avg pool needs M, shift for (sorted, distinct)."""
    g = _pool_geometry("qavg_pool2d", x_shape, kernel_size, stride, padding, 1)
    hs = _window_counts(g.h, g.oh, g.kh, g.sh, g.ph, count_include_pad)
    ws = _window_counts(g.w, g.ow, g.kw, g.sw, g.pw, count_include_pad)
    return sorted({a * b for a in set(hs) for b in set(ws)})


def _pool_geometry(
    op: str,
    x_shape: Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
) -> ConvGeometry:
    n, c, h, w = (int(v) for v in x_shape)
    kh, kw = _pair(kernel_size, "kernel_size", op)
    sh, sw = _pair(kernel_size if stride is None else stride, "stride", op)
    (ph, pw), (dh, dw) = _pair(padding, "padding", op), _pair(dilation, "dilation", op)
    if ph > kh // 2 or pw > kw // 2 or max(ph, pw) > 7:
        raise ValueError(f"{op}: padding must be at most half the kernel (and 7), got {padding}")
    g = ConvGeometry(n, h, w, c, c, kh, kw, sh, sw, ph, pw, dh, dw)
    if g.oh < 1 or g.ow < 1:
        raise ValueError(f"{op}: output would be empty for input {tuple(x_shape)}")
    return g


def _lower_pool(
    op: str,
    kind: str,
    x_shape: Sequence[int],
    g: ConvGeometry,
    x_zp: int,
    out_zp: int,
    qmin: int,
    qmax: int,
    counts: tuple[list[int], list[int]] | None,
    multipliers: Mapping[int, tuple[int, int]] | None,
    target: Target,
) -> Program:
    cfg = get_config(target)
    _check_clamp(op, out_zp, qmin, qmax)
    n_img, c = g.batch, g.cin
    iw_len = g.in_cols(g.ow)
    plan = None
    for c_t in sorted({c} | {v for v in (512, 256, 128, 64, 32, 16, 8) if v < c}, reverse=True):
        if kind == "avg" and 3 * c_t * 2 * len(multipliers or {}) > cfg.tbl_words:
            continue
        fits = [
            o
            for o in range(1, min(g.oh, 1023) + 1)
            if 2 * (g.in_rows(o) * iw_len + o * g.ow) * c_t <= cfg.acc_words
        ]
        if fits and iw_len <= 1023 + g.pw * 2:
            plan = (c_t, max(fits))
            break
    if plan is None:
        raise ValueError(f"{op}: a single output row of {x_shape} does not fit the accumulator")
    c_t, oh_t = plan
    oh_t = min(oh_t, -(-g.oh // min(4, g.oh)))  # at least a few steps so DMA and ALU overlap
    in_slot = g.in_rows(oh_t) * iw_len * c_t
    out_base = 2 * in_slot
    out_slot = oh_t * g.ow * c_t
    b = Builder(op, cfg)
    xr = b.region("x", tuple(int(v) for v in x_shape), "int8", "input", "NHWC")
    yr = b.region("y", (n_img, c, g.oh, g.ow), "int8", "output", "NHWC")
    c_lens = sorted({min(c_t, c - c0) for c0 in range(0, c, c_t)})
    tbl_at: dict[tuple[int, int], int] = {}
    if kind == "avg":
        assert counts is not None and multipliers is not None
        chunks, pos = [], 0
        for cnt in sorted({a * b2 for a in counts[0] for b2 in counts[1]}):
            if cnt not in multipliers:
                raise ValueError(
                    f"{op}: multipliers has no (M, shift) for window count {cnt}; "
                    "use avg_pool_counts() to list the counts needed"
                )
            m, s = multipliers[cnt]
            for cl in c_lens:
                tbl_at[(cnt, cl)] = pos
                chunks.append(np.array([0] * cl + [m] * cl + [s] * cl, np.int64))
                pos += 3 * cl
        if pos > cfg.tbl_words:
            raise ValueError(f"{op}: {len(chunks)} requant tables do not fit the table memory")
        table = np.concatenate(chunks).astype(np.int32)
        tr = b.region("tables", table.shape, "int32", "const", data=table)
    tiles = [
        (n, oh0, min(oh_t, g.oh - oh0), c0, min(c_t, c - c0))
        for n in range(n_img)
        for oh0 in range(0, g.oh, oh_t)
        for c0 in range(0, c, c_t)
    ]
    pipe = Pipeline(b, len(tiles), len(tiles))
    taps = [(r, q) for r in range(g.kh) for q in range(g.kw)]
    for k, (n, oh0, oh_len, c0, c_len) in enumerate(tiles):
        inp, out = (k % 2) * in_slot, out_base + (k % 2) * out_slot
        ih0, ih_len = oh0 * g.sh - g.ph, g.in_rows(oh_len)
        lo_h, hi_h = max(ih0, 0), min(ih0 + ih_len, g.h)
        with pipe.load(k):
            if k == 0 and kind == "avg":
                b.set(ld_ystride=0, ld_xstride=0)
                _split_tbl(b, tr.offset, table.size)
            hi_w = min(iw_len - g.pw, g.w)
            b.set(ld_ystride=g.w * c, ld_xstride=c, ld_pad=-128 if kind == "max" else x_zp)
            b.emit(
                Op.LOAD,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=inp,
                dram=xr.offset + ((n * g.h + lo_h) * g.w) * c + c0,
                y=hi_h - lo_h,
                x=hi_w,
                c=c_len,
                pt=lo_h - ih0,
                pb=ih0 + ih_len - hi_h,
                pl=g.pw,
                pr=iw_len - g.pw - hi_w,
            )
        with pipe.compute(k, k, True, True):
            b.set(a_cols=c_len)
            grid = dict(
                e0=oh_len,
                e1=g.ow,
                ds0=g.ow * c_len,
                ds1=c_len,
                ss0=g.sh * iw_len * c_len,
                ss1=g.sw * c_len,
            )
            uops = [(out, inp + (r * g.dh * iw_len + q * g.dw) * c_len, 0) for r, q in taps]
            b.emit(Op.ALU, aluop=AluOp.MOV, src=Src.ACC, uop=b.uop_block(uops[:1]), nuop=1, **grid)
            if len(uops) > 1:
                b.emit(
                    Op.ALU,
                    aluop=AluOp.MAX if kind == "max" else AluOp.ADD,
                    src=Src.ACC,
                    uop=b.uop_block(uops[1:]),
                    nuop=len(uops) - 1,
                    **grid,
                )
            if kind == "avg":
                assert counts is not None
                b.set(a_imm=-len(taps) * x_zp, a_zp=out_zp, a_lo=qmin, a_hi=qmax)
                flat = dict(e0=oh_len, e1=g.ow, ds0=g.ow * c_len, ds1=c_len)
                b.emit(
                    Op.ALU,
                    aluop=AluOp.ADD,
                    src=Src.IMM,
                    uop=b.uop_block([(out, 0, 0)]),
                    nuop=1,
                    **flat,
                )
                for r0, rl, nh in _runs(counts[0][oh0 : oh0 + oh_len]):
                    for q0, ql, nw in _runs(counts[1]):
                        dst = out + (r0 * g.ow + q0) * c_len
                        uop = b.uop_block([(dst, tbl_at[(nh * nw, c_len)], 0)])
                        b.emit(
                            Op.ALU,
                            aluop=AluOp.REQUANT,
                            src=Src.TBL,
                            uop=uop,
                            nuop=1,
                            e0=rl,
                            e1=ql,
                            ds0=g.ow * c_len,
                            ds1=c_len,
                        )
            elif (qmin, qmax) != (-128, 127):
                b.set(a_lo=qmin, a_hi=qmax)
                b.emit(
                    Op.ALU,
                    aluop=AluOp.CLAMP,
                    src=Src.IMM,
                    uop=b.uop_block([(out, 0, 0)]),
                    nuop=1,
                    e0=oh_len,
                    e1=g.ow,
                    ds0=g.ow * c_len,
                    ds1=c_len,
                )
        with pipe.store(k):
            b.set(st_ystride=g.ow * c, st_xstride=c)
            b.emit(
                Op.STORE,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=out,
                dram=yr.offset + ((n * g.oh + oh0) * g.ow) * c + c0,
                y=oh_len,
                x=g.ow,
                c=c_len,
            )
    pipe.finish()
    info = {"geometry": g, "c_t": c_t, "oh_t": oh_t}
    return b.build(0, info, {"x": g.touched_input_bytes(c)})


def _split_tbl(b: Builder, dram: int, words: int) -> None:
    for first in range(0, words, 4095):
        b.emit(
            Op.LOAD,
            mem=Mem.TBL,
            dtype=DType.I32,
            sram=first,
            dram=dram + 4 * first,
            y=1,
            x=1,
            c=min(4095, words - first),
        )


def lower_qmax_pool2d(
    x_shape: Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    *,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qmax_pool2d",
) -> Program:
    """Max over each window of int8 NCHW `x` (region "x"); output "y" keeps x's scale and zero
    point. `qmin`/`qmax` clamp a fused relu (pass `max(-128, x_zp)` as qmin)."""
    g = _pool_geometry(name, x_shape, kernel_size, stride, padding, dilation)
    return _lower_pool(name, "max", x_shape, g, 0, 0, qmin, qmax, None, None, target)


def lower_qavg_pool2d(
    x_shape: Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    *,
    x_zp: int,
    out_zp: int,
    multipliers: Mapping[int, tuple[int, int]],
    qmin: int = -128,
    qmax: int = 127,
    count_include_pad: bool = True,
    target: Target = "npu-v3",
    name: str = "qavg_pool2d",
) -> Program:
    """acc = sum over the window of (x - x_zp); out = requant(acc) with `multipliers[n]` =
    quantize_multiplier(s_in / (s_out * n)) for each window count n (see `avg_pool_counts`)."""
    g = _pool_geometry(name, x_shape, kernel_size, stride, padding, 1)
    counts = (
        _window_counts(g.h, g.oh, g.kh, g.sh, g.ph, count_include_pad),
        _window_counts(g.w, g.ow, g.kw, g.sw, g.pw, count_include_pad),
    )
    return _lower_pool(
        name, "avg", x_shape, g, x_zp, out_zp, qmin, qmax, counts, multipliers, target
    )


def lower_qadaptive_avg_pool2d(
    x_shape: Sequence[int],
    output_size: int | Sequence[int],
    *,
    x_zp: int,
    out_zp: int,
    multipliers: Mapping[int, tuple[int, int]],
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qadaptive_avg_pool2d",
) -> Program:
    """Adaptive average pooling where the input size is a multiple of the output size (uniform
    windows, e.g. global pooling); `multipliers` needs the single count (H/OH) * (W/OW)."""
    oh, ow = _pair(output_size, "output_size", name)
    h, w = int(x_shape[2]), int(x_shape[3])
    if h % oh or w % ow:
        raise NotImplementedError(
            f"{name}: input {h}x{w} is not a multiple of output {oh}x{ow}; "
            "non-uniform adaptive windows are not supported on npu_sim"
        )
    return lower_qavg_pool2d(
        x_shape,
        (h // oh, w // ow),
        (h // oh, w // ow),
        0,
        x_zp=x_zp,
        out_zp=out_zp,
        multipliers=multipliers,
        qmin=qmin,
        qmax=qmax,
        target=target,
        name=name,
    )
