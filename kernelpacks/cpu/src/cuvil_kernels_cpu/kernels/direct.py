"""Direct convolution on an NHWC input: no im2col copy at all.

For ``MR`` consecutive output pixels of one output row and kernel row ``i``, the taps they read
are ``MR`` rows of ``KW * C`` contiguous values spaced ``sw * C`` apart (dilation 1, one
group) -- exactly a micro-kernel A operand with ``lda = sw * C``. The weight rows of kernel row
``i`` are a contiguous slice of the packed panel (``K`` is in (kh, kw, c) order). Without
weight passes (``kc`` 0: the panel fits in L1, as the stems' do, or L1 is too small for
passes) a tile away from the padding is one call of the segmented register tile
(:func:`tile_seg`): its k loop runs over the ``KH`` kernel rows, A one input row further
each time, the accumulators in registers throughout -- one call per kernel row, each storing
and reloading the accumulators, made ResNet's 7x7 stem 1.3-1.4x and a 3x3 stem 1.2-1.7x
slower (2026-12-05, 1 and 2 threads). Otherwise a tile is ``KH`` calls (or passes, below)
that accumulate through a small buffer, the last one applying the epilogue and storing the
output.

The input is read in place (``geom``'s pads ``pt``, ``pl``): a tile whose taps reach into the
padding (an edge tile: first or last pixels of a row, first or last output rows) starts from
zeroed partial sums, skips the kernel rows outside the image and cuts each kernel row at kernel
columns, each piece run on the tile rows whose tap of that column is inside
(:func:`_edge_pieces`); a last call with no k steps applies the epilogue. With finite weights
the skipped taps would add exactly ``+-0`` to sums that start at ``+0``, so the output is the
one over a zero-padded copy bit for bit; the lowering reads a padded copy instead (pads 0,
``padded_shape``, wide enough for the last tile of a row) where weights are not finite, where
panels are narrower than the tile, and where the input is a network input still in NCHW (the
transpose writes the padding). Reading in place made ResNet's 3x3 layers 9-24 % faster than
the copy and the conv on it (2 threads, 2026-12-05): the copy is gone, and the top and bottom
rows of a 7x7 layer no longer multiply zeros.

Items are (image, block of output rows, group of panels), sized by the same traffic model as
the GEMM (:func:`cuvil_kernels_cpu.kernels.gemm.plan_items`).

With ``kc > 0`` (:func:`k_block`, where a panel outgrows L1) an item's full-width tiles take
the weights in passes, as the GEMM's K chunks do: one pass is one kernel row's slice of ``kc``
weight rows (``kc x NR`` floats, two thirds of L1 or less), run by every tile of the item
before the next pass starts, so the slice stays in L1 while all the tiles read it (ONNX
Runtime's NCHWc kernels keep a filter block in L1 the same way). The next slice is prefetched
into L2 meanwhile. Partial sums wait in a per-thread scratch between passes and start the next
pass; the k order of every sum is the one-pass order, so the output is bit-identical.

Full-width panels cut each output row into ``ceil(W / MR)`` tiles of as equal a height as
possible (:func:`row_tiles`: 7 = 4 + 3, 14 = 5 + 5 + 4), each computing exactly its rows: a
1-row tile is bound by the latency of its four accumulator chains and took 2.6x the time per
row of a full tile, a 4- or 5-row tile the same as a full one (measured 2026-12-05). Six-row
tiles with a short last one (7 = 6 + 1) made ResNet's 7x7x512 layers 7 % slower.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import gemm
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.gemm import (
    _finish_tile,
    _store_edge,
    tile_rows,
)
from cuvil_kernels_cpu.kernels.isa import MR, NR, NV, kernel, l1d_bytes, serial_kernel
from cuvil_kernels_cpu.kernels.microkernel import (
    RES_BEFORE,
    prefetch_l2,
    tile_f32_s1,
    tile_f32_s2,
    tile_f32_s3,
    tile_f32_s4,
    tile_f32_s5,
    tile_f32_s6,
    tile_f32_seg_1,
    tile_f32_seg_2,
    tile_f32_seg_3,
)

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)


def padded_shape(n: int, c: int, kh: int, kw: int, stride: tuple[int, int],
                 dilation_h: int, pads: tuple[int, int, int, int], h: int, w: int,
                 oh: int, ow: int) -> tuple[int, int, int, int]:  # fmt: skip
    """The padded input every tile can read inside of (rows and columns past the image)."""
    hp = max(h + pads[0] + pads[2], (oh - 1) * stride[0] + (kh - 1) * dilation_h + 1)
    tiles = -(-ow // MR)  # narrow panels' tiles of MR rows, the last one past the row's end
    wp = max(w + pads[1] + pads[3], (tiles * MR - 1) * stride[1] + kw)
    return (n, hp, wp, c)


def plan_rows(n: int, oh: int, ow: int, k: int, npanels: int, threads: int) -> tuple[int, int]:
    """(output rows per item, panels per item), from the GEMM's traffic model.

    With several threads: items of one panel each and row blocks that divide the image, as
    many rows as the model allows, such that every thread gets the same number of equal items
    (at least four each where the layer has them, else two). The model's 8-row blocks of a
    56-row layer made 7 items, 4 for one thread and 3 for the other, and its two-panel items of
    a 28x28x128 layer 4 items: measured interleaved (2 threads, 2026-12-05), 0.883 -> 0.794 ms
    and 1.014 -> 0.939 ms."""
    mb, pg = gemm.plan_items(n * oh * ow, k, npanels, threads)
    rows = max(1, min(oh, mb * MR // max(1, ow)))
    if threads <= 1:
        return rows, pg
    for least in (4 * threads, 2 * threads):
        for r in range(rows, 0, -1):
            items = n * (oh // r) * npanels
            if oh % r == 0 and items % threads == 0 and items >= least:
                return r, 1
    return rows, pg


def k_block(kh: int, run: int, l1: int | None = None, nr: int = NR) -> int:
    """Weight rows per pass of :func:`conv_direct` (``kc``; 0: all of a kernel row per tile).

    The rule of :func:`cuvil_kernels_cpu.kernels.gemm.k_block`, with passes that never cross a
    kernel row (``run = KW * C`` rows each): blocking only where the panel (``KH * run``
    rows) outgrows L1 and a pass may take at least ``MIN_K_BLOCK`` rows; each kernel row is
    cut into equal passes of at most two thirds of L1 (a multiple of 4 rows)."""
    l1 = l1d_bytes() if l1 is None else l1
    return 0 if kh * run * nr * 4 <= l1 else gemm.equal_chunks(run, l1, nr)


@serial_kernel
def row_tiles(ow: int) -> tuple[int, int, int]:
    """``(tiles, base, extra)``: an output row of ``ow`` pixels as ``ceil(ow / MR)`` tiles, the
    first ``extra`` of ``base + 1`` rows and the rest of ``base`` (56: 6 x 6 + 4 x 5; 14: 5 + 5
    + 4; 12: 6 + 6; 7: 4 + 3). Tile ``j`` starts at ``j * base + min(j, extra)``."""
    tiles = (ow + MR - 1) // MR
    return tiles, ow // tiles, ow % tiles


@serial_kernel
def _full_panel(xp, b, y0, y1, b_addr, bias_addr, col0, out, res, out2, res2, geom, klo, khi,
                kflags, post, act, res_mode, kc, part, zero):  # type: ignore[no-untyped-def]  # fmt: skip
    """Output rows ``y0 .. y1`` of image ``b`` for one full-width panel: every tile of
    :func:`row_tiles`, in passes of ``kc`` weight rows per kernel row (0: one pass per kernel
    row, tile by tile); edge tiles as in the module docstring."""
    inf = np.float32(np.inf)
    n, oh, ow, o = out.shape
    hp, wpd, c = xp.shape[1], xp.shape[2], xp.shape[3]  # the input as read (padded or not)
    kh, kw, sh, sw, dh = geom[0], geom[1], geom[2], geom[3], geom[4]
    pt, pl = geom[5], geom[6]
    run = kw * c
    x_addr = xp.ctypes.data
    z_addr = zero.ctypes.data
    tiles, base, extra = row_tiles(ow)
    nt = (y1 - y0) * tiles
    step = run if kc <= 0 else kc
    # kc = 0: each tile runs all its passes before the next tile starts (one scratch slot);
    # kc > 0: each pass runs over every tile before the next pass (its slice stays in L1)
    by_tile = nt if kc <= 0 else 1
    by_pass = 1 if kc <= 0 else nt
    lines = (step * NR * 4) // 64
    per_tile = (lines + nt - 1) // nt
    for t_major in range(by_tile):
        if kc <= 0:
            y, q0, nrows = _tile_at(t_major, y0, tiles, base, extra)
            if not _edge(y * sh - pt, q0 * sw - pl, nrows, kh, kw, sw, dh, hp, wpd):
                # all kernel rows in one call, the accumulators in registers throughout
                a_addr = x_addr + (((b * hp + y * sh - pt) * wpd) + q0 * sw - pl) * c * 4
                row0 = (b * oh + y) * ow + q0
                c_addr = out.ctypes.data + (row0 * o + col0) * 4
                r_addr = res.ctypes.data + (row0 * o + col0) * 4 if res_mode != 0 else z_addr
                tile_seg(NV, nrows, a_addr, sw * c, b_addr, run, c_addr, o, bias_addr, r_addr, o,
                         klo, khi, kflags, kh, dh * wpd * c)  # fmt: skip
                if post:
                    _finish_tile(out2, row0, nrows, col0, NR, res2, act, res_mode)
                continue
        for i in range(kh):
            for k0 in range(0, run, step):
                kk = min(step, run - k0)
                w_addr = b_addr + (i * run + k0) * NR * 4
                last = i == kh - 1 and k0 + kk >= run
                ahead = w_addr + kk * NR * 4  # the next slice (or the next panel's first)
                for p_major in range(by_pass):
                    q = t_major + p_major
                    if kc > 0:
                        for ln in range(p_major * per_tile, min(lines, (p_major + 1) * per_tile)):
                            prefetch_l2(ahead + ln * 64)
                    y, q0, nrows = _tile_at(q, y0, tiles, base, extra)
                    ix0 = q0 * sw - pl
                    iy = y * sh + i * dh - pt
                    pt_addr = part.ctypes.data + (q if kc > 0 else 0) * MR * NR * 4
                    row0 = (b * oh + y) * ow + q0
                    c_addr = out.ctypes.data + (row0 * o + col0) * 4
                    r_addr = res.ctypes.data + (row0 * o + col0) * 4 if res_mode != 0 else z_addr
                    if _edge(y * sh - pt, ix0, nrows, kh, kw, sw, dh, hp, wpd):
                        # a tile with taps in the padding: only its taps inside the input
                        if i == 0 and k0 == 0:
                            part[q if kc > 0 else 0, :nrows] = 0.0
                        if 0 <= iy < hp:
                            row_addr = x_addr + (b * hp + iy) * wpd * c * 4
                            _edge_pieces(row_addr, ix0, nrows, sw, wpd, c, k0, kk,
                                         b_addr + i * run * NR * 4, pt_addr, z_addr)  # fmt: skip
                        if last:
                            tile_rows(nrows, pt_addr, NR, w_addr, 0, c_addr, o, bias_addr, r_addr,
                                      o, klo, khi, kflags, pt_addr)  # fmt: skip
                            if post:
                                _finish_tile(out2, row0, nrows, col0, NR, res2, act, res_mode)
                        continue
                    a_addr = x_addr + ((((b * hp + iy) * wpd) + ix0) * c + k0) * 4
                    init = 0 if i == 0 and k0 == 0 else pt_addr
                    if not last:
                        tile_rows(nrows, a_addr, sw * c, w_addr, kk, pt_addr, NR, z_addr, z_addr,
                                  0, -inf, inf, 0, init)  # fmt: skip
                        continue
                    tile_rows(nrows, a_addr, sw * c, w_addr, kk, c_addr, o, bias_addr, r_addr, o,
                              klo, khi, kflags, init)  # fmt: skip
                    if post:
                        _finish_tile(out2, row0, nrows, col0, NR, res2, act, res_mode)


@serial_kernel
def _tile_at(q: int, y0: int, tiles: int, base: int, extra: int) -> tuple[int, int, int]:
    """Tile ``q`` of an item whose rows start at ``y0``: (output row, first pixel, pixels)."""
    j = q % tiles
    return y0 + q // tiles, j * base + min(j, extra), base + 1 if j < extra else base


@serial_kernel
def _edge(iy0: int, ix0: int, nrows: int, kh: int, kw: int, sw: int, dh: int, h: int,
          w: int) -> bool:  # fmt: skip
    """Whether a tile whose first tap is at input (iy0, ix0) has taps outside the ``h x w``
    input (in the padding)."""
    return ix0 < 0 or ix0 + (nrows - 1) * sw + kw > w or iy0 < 0 or iy0 + (kh - 1) * dh >= h


@serial_kernel
def tile_seg(nv, nrows, a, lda, b, k, c, ldc, bias, res, ldr, lo, hi, flags, nseg, sa):  # type: ignore[no-untyped-def]  # fmt: skip
    """The segmented register tile over ``nseg`` kernel rows ``sa`` elements apart, ``k``
    weight rows each, accumulators in registers throughout: ``nrows`` rows (1 to ``MR``) of
    the full width (``nv`` >= ``NV``), or ``MR`` rows of ``nv`` < ``NV`` column vectors (a
    narrower panel)."""
    if nv >= NV:
        if nrows >= MR:
            tile_f32_s6(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
        elif nrows == 1:
            tile_f32_s1(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
        elif nrows == 2:
            tile_f32_s2(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
        elif nrows == 3:
            tile_f32_s3(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
        elif nrows == 4:
            tile_f32_s4(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
        else:
            tile_f32_s5(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
    elif nv == 1:
        tile_f32_seg_1(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
    elif nv == 2:
        tile_f32_seg_2(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)
    else:
        tile_f32_seg_3(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, nseg, sa)


@serial_kernel
def _valid_rows(ix: int, nrows: int, sw: int, w: int) -> tuple[int, int]:
    """``(r_lo, r_hi)``: the tile rows ``r`` whose tap column ``ix + r * sw`` lies in ``[0, w)``."""
    r_lo = 0 if ix >= 0 else (-ix + sw - 1) // sw
    r_hi = 0 if ix > w - 1 else min(nrows, (w - 1 - ix) // sw + 1)
    return r_lo, max(r_lo, r_hi)


@serial_kernel
def _edge_pieces(row_addr, ix0, nrows, sw, w, c, k0, kk, wrow_addr, pt_addr, z_addr):  # type: ignore[no-untyped-def]  # fmt: skip
    """Add the weight rows ``k0 .. k0 + kk`` of one kernel row to the partial sums of a tile
    at input column ``ix0`` (possibly negative) whose taps leave the input row (``w`` pixels
    of ``c`` channels at ``row_addr``): cut at kernel columns, each piece on the tile rows
    whose tap of that column is inside (consecutive columns with the same rows in one call),
    so no padding is read and each sum keeps its k order."""
    inf = np.float32(np.inf)
    k = k0
    end = k0 + kk
    while k < end:
        jc = k // c
        r_lo, r_hi = _valid_rows(ix0 + jc, nrows, sw, w)
        stop = (jc + 1) * c
        while stop < end and _valid_rows(ix0 + stop // c, nrows, sw, w) == (r_lo, r_hi):
            stop += c
        stop = min(stop, end)
        if r_lo < r_hi:
            a = row_addr + ((ix0 + r_lo * sw) * c + k) * 4
            acc = pt_addr + r_lo * NR * 4
            tile_rows(r_hi - r_lo, a, sw * c, wrow_addr + k * NR * 4, stop - k, acc, NR, z_addr,
                      z_addr, 0, -inf, inf, 0, acc)  # fmt: skip
        k = stop


@kernel
def conv_direct(xp, wp, bias, res, out, geom, lo, hi, act, res_mode, rows, pg, kc, work):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] = epilogue(conv(xp) + bias); ``geom`` = (KH, KW, sh, sw, dh, pt, pl):
    taps of output pixel (oh, ow) start at input (oh*sh - pt, ow*sw - pl), those outside ``xp``
    are zero (module docstring). Panels narrower than ``NR`` need a padded input (pt = pl = 0,
    :func:`padded_shape`). ``kc``: weight rows per pass over the item's tiles (:func:`k_block`;
    0 for tile by tile)."""
    npanels = wp.shape[1]
    n, oh, ow, o = out.shape
    hp, wpd, c = xp.shape[1], xp.shape[2], xp.shape[3]
    kh, kw, sh, sw, dh = geom[0], geom[1], geom[2], geom[3], geom[4]
    run = kw * c
    out2 = out.reshape(n * oh * ow, o)
    res2 = res.reshape(res.shape[0] * res.shape[1] * res.shape[2], res.shape[3])
    n_rb = (oh + rows - 1) // rows
    n_pg = (npanels + pg - 1) // pg
    tiles = (ow + MR - 1) // MR
    post = act != 0
    kflags = res_mode
    klo, khi = lo, hi
    if post:
        kflags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    zeros = np.zeros(NR, np.float32)
    z_addr = zeros.ctypes.data
    x_addr = xp.ctypes.data
    n_items = n * n_rb * n_pg
    tmp = np.empty((MR, NR), np.float32)
    slots = rows * row_tiles(ow)[0] if kc > 0 else 1
    part = np.empty((slots, MR, NR), np.float32)
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // (n_rb * n_pg)
        rest = item % (n_rb * n_pg)
        rb = rest // n_pg
        gp = rest % n_pg
        for p in range(gp * pg, min(npanels, (gp + 1) * pg)):
            col0 = p * NR
            ncols = min(NR, o - col0)
            nv = (ncols + 15) // 16
            b_addr = wp[0, p].ctypes.data
            bias_addr = bias.ctypes.data + p * NR * 4
            y_end = min(oh, (rb + 1) * rows)
            if ncols == NR:
                _full_panel(xp, b, rb * rows, y_end, b_addr, bias_addr, col0, out, res, out2,
                            res2, geom, klo, khi, kflags, post, act, res_mode, kc, part,
                            zeros)  # fmt: skip
                continue
            for y in range(rb * rows, y_end):
                for t in range(tiles):
                    q0 = t * MR
                    row0 = (b * oh + y) * ow + q0
                    nrows = min(MR, ow - q0)
                    # all kernel rows in one call, the accumulators in registers throughout
                    a_addr = x_addr + (((b * hp + y * sh) * wpd) + q0 * sw) * c * 4
                    if nrows == MR and ncols == nv * 16:
                        c_addr = out.ctypes.data + (row0 * o + col0) * 4
                        r_addr = (res.ctypes.data + (row0 * o + col0) * 4
                                  if res_mode != 0 else z_addr)  # fmt: skip
                        tile_seg(nv, MR, a_addr, sw * c, b_addr, run, c_addr, o, bias_addr, r_addr,
                                 o, klo, khi, kflags, kh, dh * wpd * c)  # fmt: skip
                        if post:
                            _finish_tile(out2, row0, MR, col0, ncols, res2, act, res_mode)
                        continue
                    # a short tile (reading past the row, inside the padding) or masked columns
                    tile_seg(nv, MR, a_addr, sw * c, b_addr, run, tmp.ctypes.data, NR, bias_addr,
                             z_addr, 0, _NEG_INF, _POS_INF, 0, kh, dh * wpd * c)  # fmt: skip
                    _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode)
