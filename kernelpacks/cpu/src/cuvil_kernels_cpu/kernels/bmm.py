"""Batched float32 matmul of two activations (attention's ``q @ k^T`` and ``p @ v``).

The right operand changes every call, so :func:`pack_rhs` packs it (in parallel, from any
strides) into the micro-kernel's panels ``[B, NP, K, NR]``; :func:`bmm` then runs items of
(batch, row block, panel) through the same register tile and epilogue as :mod:`gemm`.
``bias`` is one value per output column (``fused_matmul``'s ``[N]`` bias), ``res`` an optional
residual ``[B, M, N]``.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.gemm import _finish_tile, _store_edge, tile_edge, tile_nv
from cuvil_kernels_cpu.kernels.isa import MR, NR, kernel
from cuvil_kernels_cpu.kernels.microkernel import RES_BEFORE

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)


def packed_rhs_shape(batch: int, k: int, n: int) -> tuple[int, int, int, int]:
    return (batch, -(-n // NR), k, NR)


@kernel
def pack_rhs(src, packed, k, n, sb, sk, sn, work):  # type: ignore[no-untyped-def]
    """The right operand ``B`` [nb, K, N] -> ``packed`` [nb, NP, K, NR] (columns past N are
    zeros). ``B[bi, kk, j]`` is the flat ``src`` at ``bi * sb + kk * sk + j * sn`` (element
    strides): a contiguous operand has strides ``(K * N, N, 1)``; a transpose read in place
    (:mod:`cuvil_kernels_cpu.lowering.views`) others. Where the K axis is the contiguous one
    (``k^T`` split from ``[B, S, heads, D]``) the copy runs down the columns, so the reads stay
    sequential."""
    nb, npanels = packed.shape[0], packed.shape[1]
    n_items = nb * npanels
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        bi = item // npanels
        p = item % npanels
        c0 = p * NR
        width = min(NR, n - c0)
        dst = packed[bi, p]
        base = bi * sb + c0 * sn
        if sn == 1:
            for kk in range(k):
                row = src[base + kk * sk : base + kk * sk + width]
                out = dst[kk]
                for j in range(width):
                    out[j] = row[j]
        elif sk == 1:
            for j in range(width):
                col = src[base + j * sn : base + j * sn + k]
                for kk in range(k):
                    dst[kk, j] = col[kk]
        else:
            for j in range(width):
                col = src[base + j * sn : base + j * sn + (k - 1) * sk + 1]
                for kk in range(k):
                    dst[kk, j] = col[kk * sk]
        for kk in range(k):
            for j in range(width, NR):
                dst[kk, j] = 0.0


@kernel
def bmm(a, packed, bias, res, out, lo, hi, act, res_mode, mb, work):  # type: ignore[no-untyped-def]
    """out[b] = epilogue(a[b] @ B[b] + bias) for ``a`` [B, M, K] and packed B; ``bias`` is
    padded to ``NP * NR``; ``res`` [B, M, N] or unused (``res_mode`` 0). ``a``'s rows may be
    strided (a transpose read in place); each row is contiguous."""
    nb, m, k = a.shape
    lda = a.strides[1] // 4
    npanels = packed.shape[1]
    n = out.shape[2]
    tiles = (m + MR - 1) // MR
    n_mb = (tiles + mb - 1) // mb
    post = act != mathf.ACT_NONE
    kflags = res_mode
    klo, khi = lo, hi
    if post:
        kflags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    n_items = nb * n_mb * npanels
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        bi = item // (n_mb * npanels)
        rest = item % (n_mb * npanels)
        bm = rest // npanels
        p = rest % npanels
        tmp = np.empty((MR, NR), np.float32)
        stage = np.zeros((MR, k), np.float32)
        out2 = out[bi]
        res2 = res[bi if res.shape[0] > 1 else 0]
        col0 = p * NR
        ncols = min(NR, n - col0)
        nv = (ncols + 15) // 16
        b_addr = packed[bi, p].ctypes.data
        bias_addr = bias.ctypes.data + col0 * 4
        for t in range(bm * mb, min(tiles, (bm + 1) * mb)):
            row0 = t * MR
            nrows = min(MR, m - row0)
            a_addr = a[bi].ctypes.data + row0 * lda * 4
            a_ld = lda
            if nrows < MR:
                for i in range(nrows):
                    for c in range(k):
                        stage[i, c] = a[bi, row0 + i, c]
                a_addr = stage.ctypes.data
                a_ld = k
            if nrows == MR and ncols == nv * 16:
                c_addr = out2.ctypes.data + (row0 * n + col0) * 4
                r_addr = res2.ctypes.data + (row0 * n + col0) * 4 if res_mode != 0 else bias_addr
                tile_nv(nv, a_addr, a_ld, b_addr, NR, k, c_addr, n, bias_addr, r_addr, n,
                        klo, khi, kflags, 0)  # fmt: skip
                if post:
                    _finish_tile(out2, row0, MR, col0, ncols, res2, act, res_mode)
            else:
                tile_edge(nv, nrows, a_addr, a_ld, b_addr, k, tmp.ctypes.data, bias_addr)
                _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode)
