"""Direct convolution on a padded NHWC input: no im2col copy at all.

For ``MR`` consecutive output pixels of one output row and kernel row ``i``, the taps they read
are, in the padded input, ``MR`` rows of ``KW * C`` contiguous values spaced ``sw * C`` apart
(dilation 1, one group) -- exactly a micro-kernel A operand with ``lda = sw * C``. The weight
rows of kernel row ``i`` are a contiguous slice of the packed panel (``K`` is in (kh, kw, c)
order). So a tile is ``KH`` micro-kernel calls that accumulate through a small buffer, the last
one applying the epilogue and storing the output. The input is padded once (a copy of the
input, against the ``KH * KW`` copies im2col makes), wide enough that the last tile of a row
reads inside the buffer.

Items are (image, block of output rows, group of panels), sized by the same traffic model as
the GEMM (:func:`cuvil_kernels_cpu.kernels.gemm.plan_items`).
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import gemm
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.gemm import _finish_tile, _store_edge, tile_nv
from cuvil_kernels_cpu.kernels.isa import MR, NR, kernel
from cuvil_kernels_cpu.kernels.microkernel import RES_BEFORE

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)


def padded_shape(n: int, c: int, kh: int, kw: int, stride: tuple[int, int],
                 dilation_h: int, pads: tuple[int, int, int, int], h: int, w: int,
                 oh: int, ow: int) -> tuple[int, int, int, int]:  # fmt: skip
    """The padded input every tile can read inside of (rows and columns past the image)."""
    hp = max(h + pads[0] + pads[2], (oh - 1) * stride[0] + (kh - 1) * dilation_h + 1)
    tiles = -(-ow // MR)
    wp = max(w + pads[1] + pads[3], (tiles * MR - 1) * stride[1] + kw)
    return (n, hp, wp, c)


def plan_rows(n: int, oh: int, ow: int, k: int, npanels: int, threads: int) -> tuple[int, int]:
    """(output rows per item, panels per item), from the GEMM's traffic model."""
    mb, pg = gemm.plan_items(n * oh * ow, k, npanels, threads)
    rows = max(1, min(oh, mb * MR // max(1, ow)))
    return rows, pg


@kernel
def conv_direct(xp, wp, bias, res, out, geom, lo, hi, act, res_mode, rows, pg, work):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] = epilogue(conv(xp) + bias) for a padded input ``xp`` (the padding
    already applied: taps start at (oh*sh, ow*sw)); ``geom`` = (KH, KW, sh, sw, dh)."""
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
    acc = np.empty((MR, NR), np.float32)
    tmp = np.empty((MR, NR), np.float32)
    while True:
        item = grab(work)
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
            for y in range(rb * rows, min(oh, (rb + 1) * rows)):
                for t in range(tiles):
                    q0 = t * MR
                    row0 = (b * oh + y) * ow + q0
                    nrows = min(MR, ow - q0)
                    full = nrows == MR and ncols == nv * 16
                    for i in range(kh):
                        a_addr = x_addr + (((b * hp + y * sh + i * dh) * wpd) + q0 * sw) * c * 4
                        w_addr = b_addr + i * run * NR * 4
                        init = 0 if i == 0 else acc.ctypes.data
                        if i < kh - 1:
                            tile_nv(nv, a_addr, sw * c, w_addr, NR, run, acc.ctypes.data, NR,
                                    z_addr, z_addr, 0, _NEG_INF, _POS_INF, 0, init)  # fmt: skip
                        elif full:
                            c_addr = out.ctypes.data + (row0 * o + col0) * 4
                            r_addr = (res.ctypes.data + (row0 * o + col0) * 4
                                      if res_mode != 0 else z_addr)  # fmt: skip
                            tile_nv(nv, a_addr, sw * c, w_addr, NR, run, c_addr, o, bias_addr,
                                    r_addr, o, klo, khi, kflags, init)  # fmt: skip
                            if post:
                                _finish_tile(out2, row0, MR, col0, ncols, res2, act, res_mode)
                        else:
                            tile_nv(nv, a_addr, sw * c, w_addr, NR, run, tmp.ctypes.data, NR,
                                    bias_addr, z_addr, 0, _NEG_INF, _POS_INF, 0, init)  # fmt: skip
                            _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act,
                                        res_mode)  # fmt: skip
