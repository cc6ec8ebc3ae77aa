"""Depthwise convolution on the register tile: channels a multiple of 16, NHWC input.

Each call of :func:`cuvil_kernels_cpu.kernels.microkernel` ``dw_tile`` keeps ``6 x 64``
accumulators (six output pixels of one row, four channel vectors) in registers over all the
kernel taps, then applies bias, residual and clamp and stores -- so the input is read from L1
once per tap and the output written once. Row tails use a one-pixel tile; other activations
run over the stored row (as the GEMM does). Items are output rows (n, oh).
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import DW_NV, kernel, serial_kernel
from cuvil_kernels_cpu.kernels.microkernel import (
    DW_PIX,
    RES_AFTER,
    RES_BEFORE,
    dw_tile_1_1,
    dw_tile_1_2,
    dw_tile_1_3,
    dw_tile_1_4,
    dw_tile_6_1,
    dw_tile_6_2,
    dw_tile_6_3,
    dw_tile_6_4,
)

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)


@serial_kernel
def _tile(pix, nv, x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo, hi, fl, count):  # type: ignore[no-untyped-def]  # noqa: E501
    if pix == DW_PIX:
        if nv >= 4:
            dw_tile_6_4(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res,
                        lo, hi, fl, count)  # fmt: skip
        elif nv == 3:
            dw_tile_6_3(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res,
                        lo, hi, fl, count)  # fmt: skip
        elif nv == 2:
            dw_tile_6_2(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res,
                        lo, hi, fl, count)  # fmt: skip
        else:
            dw_tile_6_1(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res,
                        lo, hi, fl, count)  # fmt: skip
    elif nv >= 4:
        dw_tile_1_4(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo,
                    hi, fl, count)  # fmt: skip
    elif nv == 3:
        dw_tile_1_3(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo,
                    hi, fl, count)  # fmt: skip
    elif nv == 2:
        dw_tile_1_2(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo,
                    hi, fl, count)  # fmt: skip
    else:
        dw_tile_1_1(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo,
                    hi, fl, count)  # fmt: skip


@serial_kernel
def _inside(lo, step, dil, k, size):  # type: ignore[no-untyped-def]
    """The taps ``[t0, t1)`` of a window starting at ``lo`` (``lo + t * dil`` for ``t < k``)
    that fall inside ``[0, size)``."""
    t0 = 0 if lo >= 0 else (-lo + dil - 1) // dil
    t1 = min(k, (size - 1 - lo) // dil + 1) if lo < size else 0
    return t0, max(t0, t1)


@serial_kernel
def _edge_pixel(x, w, bias, res, out, acc, b, p, q, geom, lo, hi, act, res_mode):  # type: ignore[no-untyped-def]  # noqa: E501
    """One output pixel whose window crosses the border, all channels: the taps outside ``x``
    read zeros (``0 * w`` is added, as a zero-padded input would give), in the tile's order."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    zero = np.float32(0.0)
    for ch in range(c):
        acc[ch] = zero
    for i in range(kh):
        iy = p * sh - pt + i * dh
        for j in range(kw):
            ix = q * sw - pl + j * dw
            if 0 <= iy < h and 0 <= ix < wd:
                for ch in range(c):
                    acc[ch] += x[b, iy, ix, ch] * w[i, j, ch]
            else:
                for ch in range(c):
                    acc[ch] += zero * w[i, j, ch]
    dst = out[b, p, q]
    r = res[b, p, q] if res_mode != 0 else dst
    mathf.epilogue_row(acc, bias, r, dst, lo, hi, act, res_mode)


@kernel
def depthwise_tiled(x, w, bias, res, out, geom, lo, hi, act, res_mode, work):  # type: ignore[no-untyped-def]
    """out[n, p, q, c] = epilogue(bias[c] + sum_{i,j} xz[n, p*sh - pt + i*dh, q*sw - pl + j*dw, c]
    * w[i, j, c]) where ``xz`` is ``x`` zero-padded; ``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw,
    finite), ``finite`` = 1 when every weight is finite.

    No padded copy is made and every pixel runs on the register tile, reading ``x`` itself: a
    window crossing the border takes only its taps inside ``x`` -- the padding's ``0 * w``
    terms are exact zeros when the weights are finite. When they are not (``0 * inf`` is NaN)
    the border pixels take :func:`_edge_pixel`, which adds those terms. Along a row, the
    interior runs as tiles of ``DW_PIX`` pixels; a shorter tail is one more tile ending at the
    row's last interior pixel (recomputing a few pixels) unless the output overwrites the
    residual it reads, then one-pixel tiles."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    finite = geom[8] != 0
    post = act != mathf.ACT_NONE
    flags = res_mode
    klo, khi = lo, hi
    if post:
        flags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    xrow, wrow = wd * c, kw * c
    # Columns [q_lo, q_hi) have every tap inside x (floor division: Python's, also for < 0).
    q_lo = min(ow, (pl + sw - 1) // sw)
    q_hi = min(ow, max(q_lo, (wd - 1 - (kw - 1) * dw + pl) // sw + 1))
    overlap = res_mode == 0 or res.ctypes.data != out.ctypes.data
    n_items = n * oh
    acc = np.empty(c, np.float32)
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        iy0 = p * sh - pt
        i0, i1 = _inside(iy0, sh, dh, kh, h)
        qa, qb = q_lo, q_hi
        if not finite and (i0 > 0 or i1 < kh):
            qa, qb = 0, 0
        if not finite:
            for q in range(qa):
                _edge_pixel(x, w, bias, res, out, acc, b, p, q, geom, lo, hi, act, res_mode)
            for q in range(qb, ow):
                _edge_pixel(x, w, bias, res, out, acc, b, p, q, geom, lo, hi, act, res_mode)
        x_row = x.ctypes.data + (((b * h + iy0 + i0 * dh) * wd - pl) * c) * 4
        w_row = w.ctypes.data + i0 * wrow * 4
        o_row = out.ctypes.data + ((b * oh + p) * ow * c) * 4
        r_row = res.ctypes.data + ((b * oh + p) * ow * c) * 4 if res_mode != 0 else o_row
        span = qb - qa
        full = span // DW_PIX
        tail = span - full * DW_PIX
        cover = full > 0 and overlap  # the tail as one more (overlapping) full tile
        for c0 in range(0, c, 64):  # one-pixel tiles: the border columns, a tail not covered
            nv = min(4, (c - c0) // 16)
            b_addr = bias.ctypes.data + c0 * 4
            if finite:
                for k in range(qa + ow - qb):  # the border columns, left then right
                    q = k if k < qa else qb + k - qa
                    ix0 = q * sw - pl
                    j0, j1 = _inside(ix0, sw, dw, kw, wd)
                    pix_off = (q * c + c0) * 4
                    _tile(1, nv, x_row + ((q * sw + j0 * dw) * c + c0) * 4, xrow, sw * c,
                          w_row + (j0 * c + c0) * 4, c, wrow, i1 - i0, j1 - j0, dh, dw,
                          o_row + pix_off, c, b_addr, r_row + pix_off, klo, khi, flags,
                          1)  # fmt: skip
            if tail and not cover:
                q = qa + full * DW_PIX
                pix_off = (q * c + c0) * 4
                _tile(1, nv, x_row + (q * sw * c + c0) * 4, xrow, sw * c, w_row + c0 * 4, c,
                      wrow, i1 - i0, kw, dh, dw, o_row + pix_off, c, b_addr, r_row + pix_off,
                      klo, khi, flags, tail)  # fmt: skip
        for c0 in range(0, c, 16 * DW_NV):  # runs of DW_PIX pixels, DW_NV vectors wide
            nv = min(DW_NV, (c - c0) // 16)
            b_addr = bias.ctypes.data + c0 * 4
            for q, count in ((qa, full), (qb - DW_PIX, 1 if tail and cover else 0)):
                if count == 0:
                    continue
                pix_off = (q * c + c0) * 4
                _tile(DW_PIX, nv, x_row + (q * sw * c + c0) * 4, xrow, sw * c, w_row + c0 * 4,
                      c, wrow, i1 - i0, kw, dh, dw, o_row + pix_off, c, b_addr, r_row + pix_off,
                      klo, khi, flags, count)  # fmt: skip
        if post:
            q_from, q_to = (0, ow) if finite else (qa, qb)
            for q in range(q_from, q_to):
                row = out[b, p, q]
                r = res[b, p, q] if res_mode == RES_AFTER else row
                mathf.activate_row(row, r, row, act, res_mode == RES_AFTER)
