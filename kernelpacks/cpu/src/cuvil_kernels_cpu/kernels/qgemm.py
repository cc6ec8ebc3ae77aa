"""Exact int8 convolution and linear layers (``qconv2d``, ``qlinear``) on the int8 tile
(:mod:`~cuvil_kernels_cpu.kernels.tile_int8`: VNNI bytes, or int16 pairs on AVX2).

``vpdpbusd`` multiplies unsigned by signed bytes, so activations enter the tile as
``u = x + 128`` (an exact byte: ``x ^ 0x80``) and the offset is removed per output channel::

    sum_k (x_k - x_zp) w_k = sum_k u_k w_k - (128 + x_zp) sum_k w_k

Padding taps hold ``u = x_zp + 128`` and so contribute exactly zero, as the interpreter's
padding with ``x_zp`` does. The reduction is exact int32 arithmetic (every partial sum is
bounded by the int32 accumulator bound the compiler checks, docs/semantics.md section 8), and
the requantization is the spec's ``clamp(out_zp + ((acc * M + 2**(shift-1)) >> shift))`` in
int64 -- so the output is bit-identical to the interpreter's.

Weights are packed once: ``[G, NP, steps, NR, K_STEP_I8]`` (K zero-padded to a multiple of 4;
int8 for VNNI, 4 a step; int16 pairs for AVX2, :mod:`~cuvil_kernels_cpu.kernels.tile_int8`),
with ``corr[o] = bias[o] - (128 + x_zp) * sum_k w[o, k]`` precomputed in int64.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import INT8_PAIRS, K_STEP_I8, MR_I8, NR_I8, kernel, serial_kernel
from cuvil_kernels_cpu.kernels.tile_int8 import tile_u8s8


def pack_weights(w_kn: np.ndarray) -> np.ndarray:
    """int8 ``[G, K, Og]`` -> ``[G, NP, steps, NR_I8, K_STEP_I8]`` (zero-padded in K to a
    multiple of 4 and in columns): bytes for the VNNI tile, int16 for the AVX2 pairs."""
    g, k, og = w_kn.shape
    kp = -(-k // 4) * 4
    npanels = -(-og // NR_I8)
    padded = np.zeros((g, kp, npanels * NR_I8), np.int16 if INT8_PAIRS else np.int8)
    padded[:, :k, :og] = w_kn
    steps = kp // K_STEP_I8
    t = padded.reshape(g, steps, K_STEP_I8, npanels, NR_I8).transpose(0, 3, 1, 4, 2)
    return np.ascontiguousarray(t)


def correction(w_kn: np.ndarray, bias: np.ndarray | None, x_zp: int) -> np.ndarray:
    """``bias[o] - (128 + x_zp) * sum_k w[o, k]`` as int64 ``[G * Og]``."""
    g, k, og = w_kn.shape
    wsum = w_kn.astype(np.int64).sum(axis=1).reshape(g * og)
    b = np.zeros(g * og, np.int64) if bias is None else np.asarray(bias, np.int64)
    return b - (128 + int(x_zp)) * wsum


def plan_items(m: int, k: int, npanels: int, threads: int) -> tuple[int, int]:
    """As :func:`cuvil_kernels_cpu.kernels.gemm.plan_items`, for bytes and the int8 tile."""
    from cuvil_kernels_cpu.kernels.gemm import plan_items as plan

    return plan(m, k, npanels, threads, elem=1, nr=NR_I8, mr=MR_I8)


@serial_kernel
def _gather_u8(x, a, r0, rows, g, cg, geom, oh, ow, pad):  # type: ignore[no-untyped-def]
    """im2col rows of group ``g`` as ``x + 128`` bytes; padding taps hold ``pad``. Views are
    indexed from 0 so the copies vectorize; a kernel row inside the image with one group is
    one contiguous run of ``KW * C`` bytes."""
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    h, w, ctot = x.shape[1], x.shape[2], x.shape[3]
    c0 = g * cg
    kfull = a.shape[1]
    run = kw * cg
    contiguous = dw == 1 and cg == ctot
    xf = x.reshape(x.size)
    for r in range(rows):
        q = r0 + r
        n = q // (oh * ow)
        p = q % (oh * ow)
        y0 = (p // ow) * sh - pt
        x0 = (p % ow) * sw - pl
        inside_x = x0 >= 0 and x0 + (kw - 1) * dw < w
        arow = a[r]
        for i in range(kh):
            iy = y0 + i * dh
            drow = arow[i * run : (i + 1) * run]
            if 0 <= iy < h and inside_x and contiguous:
                src = ((n * h + iy) * w + x0) * ctot
                srow = xf[src : src + run]
                for c in range(run):
                    drow[c] = np.uint8(np.int32(srow[c]) + 128)
                continue
            for j in range(kw):
                ix = x0 + j * dw
                d = drow[j * cg : (j + 1) * cg]
                if 0 <= iy < h and 0 <= ix < w:
                    src = ((n * h + iy) * w + ix) * ctot + c0
                    srow = xf[src : src + cg]
                    for c in range(cg):
                        d[c] = np.uint8(np.int32(srow[c]) + 128)
                else:
                    for c in range(cg):
                        d[c] = pad
        tail = arow[kh * run :]
        for c in range(tail.size):
            tail[c] = 0
    for r in range(rows, a.shape[0]):
        arow = a[r]
        for c in range(kfull):
            arow[c] = 0


@kernel
def qconv_gemm(x, wp, corr, mult, shift, out, geom, out_zp, qmin, qmax, pad, mb, pg, work):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] (int8) = requant(qconv(x[N, H, W, C] int8)) -- module docstring.

    ``pad`` = x_zp + 128 (the byte padding taps hold); ``mult``/``shift`` int64 per channel."""
    groups, npanels, steps = wp.shape[0], wp.shape[1], wp.shape[2]
    n, oh, ow, o = out.shape
    m = n * oh * ow
    og = o // groups
    cg = x.shape[3] // groups
    out2 = out.reshape(m, o)
    tiles = (m + MR_I8 - 1) // MR_I8
    n_mb = (tiles + mb - 1) // mb
    n_pg = (npanels + pg - 1) // pg
    kb = steps * K_STEP_I8
    n_items = groups * n_mb * n_pg
    # scratch once per call (per thread), not per item (see kernels/gemm.py's conv_gemm)
    abuf_all = np.empty((mb * MR_I8, kb), np.uint8)
    tmp = np.empty((MR_I8, NR_I8), np.int32)
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        g = item // (n_mb * n_pg)
        rest = item % (n_mb * n_pg)
        bm = rest // n_pg
        bp = rest % n_pg
        t0 = bm * mb
        t1 = min(tiles, t0 + mb)
        r0 = t0 * MR_I8
        rows = min(m, t1 * MR_I8) - r0
        abuf = abuf_all[: (t1 - t0) * MR_I8]
        _gather_u8(x, abuf, r0, rows, g, cg, geom, oh, ow, pad)
        for p in range(bp * pg, min(npanels, (bp + 1) * pg)):
            col0 = g * og + p * NR_I8
            ncols = min(NR_I8, og - p * NR_I8)
            b_addr = wp[g, p].ctypes.data
            for t in range(t1 - t0):
                row0 = r0 + t * MR_I8
                nrows = min(MR_I8, m - row0)
                tile_u8s8(abuf.ctypes.data + t * MR_I8 * kb, kb, b_addr, steps, tmp.ctypes.data,
                          NR_I8)  # fmt: skip
                for i in range(nrows):
                    for j in range(ncols):
                        oc = col0 + j
                        acc = np.int64(tmp[i, j]) + corr[oc]
                        s = shift[oc]
                        v = out_zp + ((acc * mult[oc] + (np.int64(1) << (s - 1))) >> s)
                        v = min(max(v, qmin), qmax)
                        out2[row0 + i, oc] = np.int8(v)


@kernel
def qdepthwise(x, w, bias, mult, shift, out, geom, x_zp, out_zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """Depthwise int8 conv: acc[c] = bias[c] + sum over taps inside x of (x - x_zp) * w[i, j, c]
    in int32 (padding contributes 0), then the per-channel requantization."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.int32)
        for q in range(ow):
            for ch in range(c):
                acc[ch] = bias[ch]
            for i in range(kh):
                iy = p * sh - pt + i * dh
                if iy < 0 or iy >= h:
                    continue
                for j in range(kw):
                    ix = q * sw - pl + j * dw
                    if ix < 0 or ix >= wd:
                        continue
                    for ch in range(c):
                        acc[ch] += (np.int32(x[b, iy, ix, ch]) - x_zp) * np.int32(w[i, j, ch])
            for ch in range(c):
                s = shift[ch]
                v = out_zp + ((np.int64(acc[ch]) * mult[ch] + (np.int64(1) << (s - 1))) >> s)
                out[b, p, q, ch] = np.int8(min(max(v, qmin), qmax))
