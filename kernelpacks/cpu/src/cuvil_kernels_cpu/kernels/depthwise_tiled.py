"""Depthwise convolution on the register tile: channels a multiple of 16, padded NHWC input.

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


@kernel
def depthwise_tiled(xp, w, bias, res, out, geom, lo, hi, act, res_mode, work):  # type: ignore[no-untyped-def]
    """out[n, p, q, c] = epilogue(bias[c] + sum_{i,j} xp[n, p*sh + i*dh, q*sw + j*dw, c]
    * w[i, j, c]) for a padded input ``xp``; ``geom`` = (KH, KW, sh, sw, dh, dw)."""
    n, oh, ow, c = out.shape
    hp, wpd = xp.shape[1], xp.shape[2]
    kh, kw, sh, sw, dh, dw = geom[0], geom[1], geom[2], geom[3], geom[4], geom[5]
    post = act != mathf.ACT_NONE
    flags = res_mode
    klo, khi = lo, hi
    if post:
        flags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    xrow = wpd * c
    n_items = n * oh
    while True:
        item = grab(work)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        for c0 in range(0, c, 64):
            nv = min(4, (c - c0) // 16)
            q = 0
            while q < ow:
                pix = DW_PIX if q + DW_PIX <= ow else 1
                x_addr = xp.ctypes.data + (((b * hp + p * sh) * wpd + q * sw) * c + c0) * 4
                o_addr = out.ctypes.data + (((b * oh + p) * ow + q) * c + c0) * 4
                r_addr = (res.ctypes.data + (((b * oh + p) * ow + q) * c + c0) * 4
                          if res_mode != 0 else o_addr)  # fmt: skip
                w_addr, b_addr = w.ctypes.data + c0 * 4, bias.ctypes.data + c0 * 4
                _tile(pix, nv, x_addr, xrow, sw * c, w_addr, c, kh * kw, kw, dh, dw, o_addr, c,
                      b_addr, r_addr, klo, khi, flags)  # fmt: skip
                q += pix
        if post:
            for q in range(ow):
                row = out[b, p, q]
                r = res[b, p, q] if res_mode == RES_AFTER else row
                mathf.activate_row(row, r, row, act, res_mode == RES_AFTER)
