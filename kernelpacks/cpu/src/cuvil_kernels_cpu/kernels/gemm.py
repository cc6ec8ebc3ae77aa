"""Float32 GEMM and convolution-as-GEMM on the register tile, with the epilogue fused.

One kernel, :func:`conv_gemm`, serves ``linear``, ``matmul`` with a constant right operand,
1x1 convolutions and every other convolution through im2col: the output is ``[M, O]`` with
``M = N * OH * OW`` rows (NHWC), the weights are packed once at lowering into panels
``[G, NP, K, NR]`` (:func:`pack_weights`; ``K = KH * KW * Cg`` in (kh, kw, c) order, columns
zero-padded to a multiple of ``NR``), and the work is split into items of ``mb`` row tiles by
``pg`` panels that run in parallel (``prange``). An item gathers its im2col rows into a block
that stays in L2 -- or, for a 1x1 stride-1 convolution or a linear layer, reads the input
rows in place -- then runs the micro-kernel over its panels and row tiles. Bias, clamp-family
activation and residual are applied by the micro-kernel before it stores the tile; other
activations (gelu, silu, hardswish, sigmoid) run over the tile right after, while it is in L1.
So each output element is written once, with its epilogue, in the same pass.

Tiles cut by the edge of the output (the last rows, or ``O`` not a multiple of ``NR``) are
computed into a small buffer and copied with the same epilogue.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.isa import MR, NR, kernel, serial_kernel
from cuvil_kernels_cpu.kernels.microkernel import RES_AFTER, RES_BEFORE, tile_f32

#: res_mode values
RES_NONE = 0

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)

#: Bytes an item's A block and B panels may use (they should stay in the 2 MB L2 together).
A_BLOCK_BYTES = 192 * 1024
B_GROUP_BYTES = 768 * 1024


def pack_weights(w_kn: np.ndarray, groups: int = 1) -> np.ndarray:
    """``[G, K, Og]`` (or ``[K, O]`` with ``groups=1``) float32 -> panels ``[G, NP, K, NR]``."""
    w = np.asarray(w_kn, dtype=np.float32)
    if w.ndim == 2:
        w = w[None]
    g, k, og = w.shape
    npanels = -(-og // NR)
    padded = np.zeros((g, k, npanels * NR), np.float32)
    padded[:, :, :og] = w
    return np.ascontiguousarray(padded.reshape(g, k, npanels, NR).transpose(0, 2, 1, 3))


def pack_bias(bias: np.ndarray | None, groups: int, og: int) -> np.ndarray:
    """Bias ``[O]`` -> ``[G * NP * NR]`` zero-padded per group (zeros when there is none)."""
    npanels = -(-og // NR)
    out = np.zeros((groups, npanels * NR), np.float32)
    if bias is not None:
        out[:, :og] = np.asarray(bias, np.float32).reshape(groups, og)
    return out.reshape(-1)


def conv_weight_kn(weight: np.ndarray, groups: int) -> np.ndarray:
    """OIHW conv weight -> ``[G, KH*KW*Cg, Og]`` in the (kh, kw, c) order of the im2col rows."""
    o, cg, kh, kw = weight.shape
    w = np.asarray(weight, np.float32).reshape(groups, o // groups, cg, kh, kw)
    return np.ascontiguousarray(w.transpose(0, 3, 4, 2, 1)).reshape(groups, kh * kw * cg, -1)


def plan_items(m: int, k: int, npanels: int, threads: int) -> tuple[int, int]:
    """(row tiles per item, panels per item): blocks that fit L2, and enough items to share
    among ``threads`` (more than one item per thread evens out the tail)."""
    tiles = -(-m // MR)
    mb = max(1, min(tiles, A_BLOCK_BYTES // max(1, MR * k * 4)))
    pg = max(1, min(npanels, B_GROUP_BYTES // max(1, k * NR * 4)))
    want = 1 if threads <= 1 else 3 * threads
    while -(-tiles // mb) * -(-npanels // pg) < want and (mb > 1 or pg > 1):
        if mb > 1 and (mb >= 4 or pg == 1):
            mb = (mb + 1) // 2
        else:
            pg = (pg + 1) // 2
    return mb, pg


@serial_kernel
def _gather_rows(x, a, r0, rows, g, geom, oh, ow):  # type: ignore[no-untyped-def]
    """im2col rows ``r0 .. r0 + rows`` of group ``g`` into ``a`` (zeros for padding)."""
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    h, w = x.shape[1], x.shape[2]
    cg = a.shape[1] // (kh * kw)
    c0 = g * cg
    for r in range(rows):
        q = r0 + r
        n = q // (oh * ow)
        p = q % (oh * ow)
        y0 = (p // ow) * sh - pt
        x0 = (p % ow) * sw - pl
        col = 0
        for i in range(kh):
            iy = y0 + i * dh
            for j in range(kw):
                ix = x0 + j * dw
                if 0 <= iy < h and 0 <= ix < w:
                    for c in range(cg):
                        a[r, col + c] = x[n, iy, ix, c0 + c]
                else:
                    for c in range(cg):
                        a[r, col + c] = 0.0
                col += cg
    for r in range(rows, a.shape[0]):
        for c in range(a.shape[1]):
            a[r, c] = 0.0


@serial_kernel
def _finish_tile(out2, row0, nrows, col0, ncols, res2, act, res_mode):  # type: ignore[no-untyped-def]
    """The non-clamp activation (and a residual added after it) over a stored tile."""
    for i in range(nrows):
        for j in range(ncols):
            v = mathf.activate(out2[row0 + i, col0 + j], act)
            if res_mode == RES_AFTER:
                v += res2[row0 + i, col0 + j]
            out2[row0 + i, col0 + j] = v


@serial_kernel
def _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode):  # type: ignore[no-untyped-def]
    """Copy the valid part of a tile computed into ``tmp`` (bias already added) with the
    epilogue: residual, clamp or activation, residual, in the order of ``res_mode``."""
    for i in range(nrows):
        for j in range(ncols):
            v = tmp[i, j]
            if res_mode == RES_BEFORE:
                v += res2[row0 + i, col0 + j]
            v = mathf.clamp_f32(v, lo, hi)
            v = mathf.activate(v, act)
            if res_mode == RES_AFTER:
                v += res2[row0 + i, col0 + j]
            out2[row0 + i, col0 + j] = v


@kernel
def conv_gemm(x, wp, bias, res, out, geom, lo, hi, act, res_mode, direct, mb, pg):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] = epilogue(conv(x[N, H, W, C], weights) + bias) (module docstring).

    ``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw); ``direct``: read A rows from ``x`` itself
    (1x1, stride 1, no padding, one group); ``res`` is ``[N, OH, OW, O]`` or unused
    (``res_mode`` 0); ``act`` an ``mathf.ACT_*`` code applied after the ``lo``/``hi`` clamp."""
    groups, npanels, k = wp.shape[0], wp.shape[1], wp.shape[2]
    n, oh, ow, o = out.shape
    m = n * oh * ow
    og = o // groups
    out2 = out.reshape(m, o)
    res2 = res.reshape(res.shape[0] * res.shape[1] * res.shape[2], res.shape[3])
    tiles = (m + MR - 1) // MR
    n_mb = (tiles + mb - 1) // mb
    n_pg = (npanels + pg - 1) // pg
    cin = x.shape[3]
    x2 = x.reshape(x.shape[0] * x.shape[1] * x.shape[2], cin)
    x_addr = x.ctypes.data
    out_addr = out.ctypes.data
    res_addr = res.ctypes.data
    post = act != mathf.ACT_NONE
    kflags = res_mode
    klo, khi = lo, hi
    if post:
        # The micro-kernel adds a residual that comes before the activation; the activation and
        # a residual after it are applied over the stored tile.
        kflags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    for item in prange(n_mb * n_pg * groups):
        g = item // (n_mb * n_pg)
        rest = item % (n_mb * n_pg)
        bm = rest // n_pg
        bp = rest % n_pg
        t0 = bm * mb
        t1 = min(tiles, t0 + mb)
        r0 = t0 * MR
        rows = min(m, t1 * MR) - r0
        tmp = np.empty((MR, NR), np.float32)
        if direct:
            abuf = np.empty((MR, k), np.float32)
            a_addr = x_addr + r0 * cin * 4
        else:
            abuf = np.empty(((t1 - t0) * MR, k), np.float32)
            _gather_rows(x, abuf, r0, rows, g, geom, oh, ow)
            a_addr = abuf.ctypes.data
        for p in range(bp * pg, min(npanels, (bp + 1) * pg)):
            col0 = g * og + p * NR
            ncols = min(NR, og - p * NR)
            b_addr = wp[g, p].ctypes.data
            bias_addr = bias.ctypes.data + (g * npanels + p) * NR * 4
            for t in range(t1 - t0):
                row0 = r0 + t * MR
                nrows = min(MR, m - row0)
                a_tile = a_addr + t * MR * k * 4
                if direct and nrows < MR:
                    # The last rows of the input: stage them so the tile never reads past x.
                    for i in range(MR):
                        for c in range(k):
                            abuf[i, c] = x2[row0 + i, c] if i < nrows else 0.0
                    a_tile = abuf.ctypes.data
                if nrows == MR and ncols == NR:
                    c_addr = out_addr + (row0 * o + col0) * 4
                    r_addr = res_addr + (row0 * o + col0) * 4 if res_mode != RES_NONE else bias_addr
                    tile_f32(a_tile, k, b_addr, NR, k, c_addr, o, bias_addr, r_addr, o,
                             klo, khi, kflags)  # fmt: skip
                    if post:
                        _finish_tile(out2, row0, MR, col0, NR, res2, act, res_mode)
                else:
                    tile_f32(a_tile, k, b_addr, NR, k, tmp.ctypes.data, NR, bias_addr, bias_addr, 0,
                             _NEG_INF, _POS_INF, 0)  # fmt: skip
                    _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode)
