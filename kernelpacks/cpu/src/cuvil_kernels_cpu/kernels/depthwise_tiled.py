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
from cuvil_kernels_cpu.kernels.isa import kernel, serial_kernel
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
def _tile(pix, nv, x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl):  # type: ignore[no-untyped-def]  # noqa: E501
    if pix == DW_PIX:
        if nv >= 4:
            dw_tile_6_4(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
        elif nv == 3:
            dw_tile_6_3(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
        elif nv == 2:
            dw_tile_6_2(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
        else:
            dw_tile_6_1(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
    elif nv >= 4:
        dw_tile_1_4(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
    elif nv == 3:
        dw_tile_1_3(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
    elif nv == 2:
        dw_tile_1_2(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)
    else:
        dw_tile_1_1(x, xrow, xpix, w, wtap, taps, kw, dh, dw, out, opix, bias, res, lo, hi, fl)


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
    * w[i, j, c]) where ``xz`` is ``x`` zero-padded; ``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw).

    No padded copy is made: the pixels whose window lies inside ``x`` (all but a border a
    pixel or two wide) run on the register tile reading ``x`` itself, the others take
    :func:`_edge_pixel`."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    post = act != mathf.ACT_NONE
    flags = res_mode
    klo, khi = lo, hi
    if post:
        flags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    xrow = wd * c
    # Columns [q_lo, q_hi) have every tap inside x (floor division: Python's, also for < 0).
    q_lo = min(ow, (pl + sw - 1) // sw)
    q_hi = min(ow, max(q_lo, (wd - 1 - (kw - 1) * dw + pl) // sw + 1))
    n_items = n * oh
    acc = np.empty(c, np.float32)
    while True:
        item = grab(work)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        iy0 = p * sh - pt
        qa, qb = q_lo, q_hi
        if iy0 < 0 or iy0 + (kh - 1) * dh >= h:
            qa, qb = 0, 0
        for q in range(qa):
            _edge_pixel(x, w, bias, res, out, acc, b, p, q, geom, lo, hi, act, res_mode)
        for q in range(qb, ow):
            _edge_pixel(x, w, bias, res, out, acc, b, p, q, geom, lo, hi, act, res_mode)
        for c0 in range(0, c, 64):
            nv = min(4, (c - c0) // 16)
            q = qa
            while q < qb:
                pix = DW_PIX if q + DW_PIX <= qb else 1
                x_addr = x.ctypes.data + (((b * h + iy0) * wd + q * sw - pl) * c + c0) * 4
                o_addr = out.ctypes.data + (((b * oh + p) * ow + q) * c + c0) * 4
                r_addr = (res.ctypes.data + (((b * oh + p) * ow + q) * c + c0) * 4
                          if res_mode != 0 else o_addr)  # fmt: skip
                w_addr, b_addr = w.ctypes.data + c0 * 4, bias.ctypes.data + c0 * 4
                _tile(pix, nv, x_addr, xrow, sw * c, w_addr, c, kh * kw, kw, dh, dw, o_addr, c,
                      b_addr, r_addr, klo, khi, flags)  # fmt: skip
                q += pix
        if post:
            for q in range(qa, qb):
                row = out[b, p, q]
                r = res[b, p, q] if res_mode == RES_AFTER else row
                mathf.activate_row(row, r, row, act, res_mode == RES_AFTER)
