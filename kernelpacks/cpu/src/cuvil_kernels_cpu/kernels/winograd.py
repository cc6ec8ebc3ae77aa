"""Winograd F(4x4, 3x3) convolution for 3x3 stride-1 layers (Lavin and Gray, 2016).

Each 4x4 block of output pixels is computed from a 6x6 input tile ``d`` as
``Y = A^T [(G g G^T) . (B^T d B)] A``: 36 products per tile and channel pair instead of 144,
so the multiply count drops 4x; the transforms cost O(C + O) per tile. With ``T`` tiles the
products are 36 GEMMs ``[T, C] @ [C, O]``, done on the register tile. Weights ``U = G g G^T``
are transformed and packed once at lowering into ``[36, NP, C, NR]``.

Work is split into chunks of tiles (the parallel items); a chunk's transformed input and
products stay in L2 between the three phases. The output transform adds the bias and applies
the epilogue before the single store of each output pixel.

**Accuracy.** The transforms multiply by constants up to 8 (A) and 5 (B) and divide by up to
24 (G), so float32 rounding in the transformed domain grows by a bounded factor. The measured
error over ResNet-shaped layers with ``K = 9 C`` products stays below a tenth of the
conformance bound ``2 K eps max(1, |y|_inf)`` (``tests/kernels/test_winograd.py`` asserts the
bound on every layer shape of ResNet-18/50 and on small shapes); ``docs/cpu-pack.md`` gives the
figures.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import MR, NR, kernel
from cuvil_kernels_cpu.kernels.microkernel import tile_f32

M_OUT = 4
ALPHA = 6
#: Fewer input channels than this: the relative error nears the bound (a third of it at 3
#: channels) and the GEMMs are too thin to pay; such layers use im2col.
MIN_CHANNELS = 16
BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float32,
)
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=np.float64,
)
AT = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    dtype=np.float32,
)

_ZERO_BIAS = np.zeros(NR, np.float32)
_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)


def transform_weights(weight: np.ndarray) -> np.ndarray:
    """OIHW 3x3 weight -> ``U`` packed ``[36, NP, C, NR]`` (float64 transform, one rounding)."""
    w = np.asarray(weight, np.float64)
    o, c = w.shape[:2]
    # G w G^T as two BLAS contractions, 3-4x faster than the three-operand einsum at 512x512
    # channels -- on one BLAS thread: these GEMMs are too thin to share, and on a busy machine
    # a second BLAS thread spinning for a core made them slower than the einsum.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        t = np.tensordot(w, G, axes=([3], [1]))  # [O, C, 3, 6]: w G^T
        u = np.tensordot(G, t, axes=([1], [2]))  # [6, O, C, 6]: G (w G^T)
    npanels = -(-o // NR)
    padded = np.zeros((ALPHA, ALPHA, c, npanels * NR), np.float32)
    padded[..., :o] = u.transpose(0, 3, 2, 1)  # [6, 6, C, O]
    padded = padded.reshape(ALPHA * ALPHA, c, npanels * NR)
    return np.ascontiguousarray(
        padded.reshape(ALPHA * ALPHA, c, npanels, NR).transpose(0, 2, 1, 3)
    )


def chunk_tiles(c: int, o: int, tiles: int, threads: int) -> int:
    """Tiles per item: a multiple of MR whose transformed input and products fit ~1 MB."""
    per_tile = ALPHA * ALPHA * (c + o + NR) * 4
    tb = max(MR, (1 << 20) // per_tile // MR * MR)
    if threads > 1:
        # at least two items per thread when there are enough tiles
        tb = min(tb, max(MR, -(-tiles // (2 * threads)) // MR * MR or MR))
    return min(tb, -(-tiles // MR) * MR)


def panels_per_item(tiles: int, tb: int, npanels: int, threads: int) -> int:
    """Output panels per item: all of them, unless there are fewer chunks of tiles than
    threads (a 7x7 layer at batch 1 has 4 tiles, one chunk: one thread would do it all). Then
    the panels are split among the threads, and each item transforms its chunk's input again.
    Measured (2 threads, 2026-12-02): 7x7x512 1.04 ms split against 1.20 ms whole; 14x14x256
    (3 chunks) 0.44 ms split into 6 items against 0.38 ms whole -- the repeated input transform
    costs more than the better balance gains, so chunks are not split beyond one per thread."""
    chunks = -(-tiles // tb)
    if threads <= 1 or chunks >= threads:
        return npanels
    n_pg = min(npanels, -(-threads // chunks))
    return -(-npanels // n_pg)


@kernel
def winograd_conv(x, u, bias, res, out, pads, lo, hi, act, res_mode, tb, pg, work):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] = epilogue(conv3x3(x[N, H, W, C]) + bias), stride 1, ``pads`` = (pt, pl).

    ``u`` is :func:`transform_weights`' packing; ``tb`` tiles per item (a multiple of MR) and
    ``pg`` output panels per item (:func:`panels_per_item`)."""
    n, oh, ow, o = out.shape
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    npanels = u.shape[1]
    opad = npanels * NR
    pt, pl = pads[0], pads[1]
    th = (oh + M_OUT - 1) // M_OUT
    tw = (ow + M_OUT - 1) // M_OUT
    tiles = n * th * tw
    chunks = (tiles + tb - 1) // tb
    zb = _ZERO_BIAS.ctypes.data
    n_pg = (npanels + pg - 1) // pg
    n_items = chunks * n_pg
    # one set of buffers per call (per thread), not per item: a fresh ~1 MB block per item cost
    # page faults, which two threads take in turn (the 2-thread layer scaled 1.1-1.4x)
    v = np.zeros((ALPHA * ALPHA, tb, c), np.float32)
    mm = np.empty((ALPHA * ALPHA, tb, opad), np.float32)
    d = np.empty((ALPHA, ALPHA, c), np.float32)
    run = ALPHA * c
    tmp = np.empty((ALPHA, ALPHA, c), np.float32)
    s = np.empty((M_OUT, ALPHA, o), np.float32)
    y = np.empty((M_OUT, o), np.float32)
    while True:
        item = grab(work)
        if item >= n_items:
            break
        t0 = (item // n_pg) * tb
        nt = min(tb, tiles - t0)
        p0 = (item % n_pg) * pg
        p1 = min(npanels, p0 + pg)
        c0 = p0 * NR
        c1 = min(o, p1 * NR)
        uc0, uc1 = np.uint64(c0), np.uint64(c1)
        if nt < tb:
            v[:, nt:, :] = 0.0  # the GEMM's last row tile reads up to a multiple of MR
        # 1. input transform: V[xi, t, :] = (B^T d B)[xi]
        for t in range(nt):
            tile = t0 + t
            b = tile // (th * tw)
            r = tile % (th * tw)
            y0 = (r // tw) * M_OUT - pt
            x0 = (r % tw) * M_OUT - pl
            inside = y0 >= 0 and x0 >= 0 and y0 + ALPHA <= h and x0 + ALPHA <= wd
            for i in range(ALPHA):
                iy = y0 + i
                di = d[i].reshape(run)
                if inside:
                    # an interior tile row is 6 * C contiguous input values
                    src = x[b, iy].reshape(wd * c)[x0 * c : x0 * c + run]
                    for e in range(run):
                        di[e] = src[e]
                else:
                    for j in range(ALPHA):
                        ix = x0 + j
                        if 0 <= iy < h and 0 <= ix < wd:
                            for ch in range(c):
                                d[i, j, ch] = x[b, iy, ix, ch]
                        else:
                            for ch in range(c):
                                d[i, j, ch] = 0.0
            # B^T d B with the F(4x4, 3x3) rows spelled out: first over the 6 columns and all
            # channels at once (flat, one long vectorized loop), then per transformed row
            f0, f1, f2 = d[0].reshape(run), d[1].reshape(run), d[2].reshape(run)
            f3, f4, f5 = d[3].reshape(run), d[4].reshape(run), d[5].reshape(run)
            g0, g1, g2 = tmp[0].reshape(run), tmp[1].reshape(run), tmp[2].reshape(run)
            g3, g4, g5 = tmp[3].reshape(run), tmp[4].reshape(run), tmp[5].reshape(run)
            for e in range(run):
                d0, d1, d2, d3, d4, d5 = f0[e], f1[e], f2[e], f3[e], f4[e], f5[e]
                g0[e] = 4.0 * d0 - 5.0 * d2 + d4
                g1[e] = -4.0 * (d1 + d2) + d3 + d4
                g2[e] = 4.0 * (d1 - d2) - d3 + d4
                g3[e] = 2.0 * (d3 - d1) - d2 + d4
                g4[e] = 2.0 * (d1 - d3) - d2 + d4
                g5[e] = 4.0 * d1 - 5.0 * d3 + d5
            for a in range(ALPHA):
                base = a * ALPHA
                for ch in range(c):
                    d0, d1, d2 = tmp[a, 0, ch], tmp[a, 1, ch], tmp[a, 2, ch]
                    d3, d4, d5 = tmp[a, 3, ch], tmp[a, 4, ch], tmp[a, 5, ch]
                    v[base, t, ch] = 4.0 * d0 - 5.0 * d2 + d4
                    v[base + 1, t, ch] = -4.0 * (d1 + d2) + d3 + d4
                    v[base + 2, t, ch] = 4.0 * (d1 - d2) - d3 + d4
                    v[base + 3, t, ch] = 2.0 * (d3 - d1) - d2 + d4
                    v[base + 4, t, ch] = 2.0 * (d1 - d3) - d2 + d4
                    v[base + 5, t, ch] = 4.0 * d1 - 5.0 * d3 + d5
        # 2. 36 GEMMs on the register tile: M[xi] = V[xi] @ U[xi]
        rows = (nt + MR - 1) // MR
        for xi in range(ALPHA * ALPHA):
            for p in range(p0, p1):
                b_addr = u[xi, p].ctypes.data
                for rt in range(rows):
                    a_addr = v[xi].ctypes.data + rt * MR * c * 4
                    c_addr = mm[xi].ctypes.data + (rt * MR * opad + p * NR) * 4
                    tile_f32(a_addr, c, b_addr, NR, c, c_addr, opad, zb, zb, 0,
                             _NEG_INF, _POS_INF, 0, 0)  # fmt: skip
        # 3. output transform, bias and epilogue: Y = A^T M A
        for t in range(nt):
            tile = t0 + t
            b = tile // (th * tw)
            r = tile % (th * tw)
            oy0 = (r // tw) * M_OUT
            ox0 = (r % tw) * M_OUT
            # A^T M A, columns first (vectorized over the item's output channels; the channel
            # index is unsigned, so the loops carry no negative-index wraparound and vectorize)
            for j in range(ALPHA):
                for oc in range(uc0, uc1):
                    m0, m1, m2 = mm[j, t, oc], mm[6 + j, t, oc], mm[12 + j, t, oc]
                    m3, m4, m5 = mm[18 + j, t, oc], mm[24 + j, t, oc], mm[30 + j, t, oc]
                    s[0, j, oc] = m0 + m1 + m2 + m3 + m4
                    s[1, j, oc] = (m1 - m2) + 2.0 * (m3 - m4)
                    s[2, j, oc] = (m1 + m2) + 4.0 * (m3 + m4)
                    s[3, j, oc] = (m1 - m2) + 8.0 * (m3 - m4) + m5
            for a in range(M_OUT):
                oy = oy0 + a
                if oy >= oh:
                    continue
                for oc in range(uc0, uc1):
                    m0, m1, m2 = s[a, 0, oc], s[a, 1, oc], s[a, 2, oc]
                    m3, m4, m5 = s[a, 3, oc], s[a, 4, oc], s[a, 5, oc]
                    y[0, oc] = m0 + m1 + m2 + m3 + m4
                    y[1, oc] = (m1 - m2) + 2.0 * (m3 - m4)
                    y[2, oc] = (m1 + m2) + 4.0 * (m3 + m4)
                    y[3, oc] = (m1 - m2) + 8.0 * (m3 - m4) + m5
                for bb in range(min(M_OUT, ow - ox0)):
                    ox = ox0 + bb
                    dst = out[b, oy, ox]
                    r = res[b, oy, ox] if res_mode != 0 else dst
                    if c0 == 0 and c1 == o:
                        mathf.epilogue_row(y[bb], bias, r, dst, lo, hi, act, res_mode)
                    else:
                        mathf.epilogue_row(y[bb, c0:c1], bias[c0:c1], r[c0:c1], dst[c0:c1], lo,
                                           hi, act, res_mode)  # fmt: skip
