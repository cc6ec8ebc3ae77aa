"""Winograd F(4x4, 3x3) convolution for 3x3 stride-1 layers (Lavin and Gray, 2016).

Each 4x4 block of output pixels is computed from a 6x6 input tile ``d`` as
``Y = A^T [(G g G^T) . (B^T d B)] A``: 36 products per tile and channel pair instead of 144,
so the multiply count drops 4x; the transforms cost O(C + O) per tile. With ``T`` tiles the
products are 36 GEMMs ``[T, C] @ [C, O]``, done on the register tile. Weights ``U = G g G^T``
are transformed and packed once at lowering into ``[36, NP, C, NR]``.

Work is split into chunks of tiles (the parallel items, :func:`chunk_tiles`); a chunk's
transformed input and products stay in L2 between the three phases. The transforms run on 16
channels at a time (:mod:`cuvil_kernels_cpu.kernels.winograd_lanes`), an interior tile read in
place; the output transform adds the bias and applies the epilogue before the single store of
each output pixel.

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
from cuvil_kernels_cpu.kernels.microkernel import B_AHEAD, keep_alive, tile_f32
from cuvil_kernels_cpu.kernels.winograd_lanes import at_lanes, at_store_lanes, bt_lanes

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


#: Transformed weights larger than this do not stay in L2 between chunks of tiles: each chunk
#: streams them from memory again, so such layers take as few chunks as fit ``BIG_CHUNK``.
WEIGHTS_IN_L2 = 1 << 20
#: Working set (transformed input, products, one tile row) of a chunk of tiles, in bytes.
CHUNK = 1 << 20
BIG_CHUNK = 3 << 19
#: Row tiles (of MR tiles) per chunk at least, where the weights are streamed: each weight
#: panel loaded from memory then serves three row tiles of the GEMM or more.
MIN_BIG_ROW_TILES = 3


def chunk_tiles(c: int, o: int, tiles: int, threads: int, nr: int = NR, mr: int = MR) -> int:
    """Tiles per item, a multiple of ``mr`` (module docstring); ``nr``/``mr``: the host's tile.

    Where the transformed weights fit in L2 (``36 C O`` floats, :data:`WEIGHTS_IN_L2`), a
    chunk's working set is about :data:`CHUNK` and there are at least two chunks per thread,
    for balance. Larger weights are streamed once per chunk, so there are as few chunks as fit
    :data:`BIG_CHUNK`, of equal size (:func:`panels_per_item` splits the output panels where
    that leaves fewer chunks than threads). Measured (2 threads, batch 1, 2026-12-06):
    28x28x128 (2.4 MB of weights) 0.54 ms in 5 chunks against 0.48 in 2; 14x14x256 (9.4 MB)
    0.89 ms in 3 chunks against 0.77 in one whose panels the threads share; at batch 8
    7x7x512 took 5.0 ms in chunks of 6 tiles against 3.9 in chunks of 18
    (:data:`MIN_BIG_ROW_TILES`)."""
    per_tile = ALPHA * ALPHA * (c + o + nr) * 4
    all_rows = -(-tiles // mr) * mr
    if ALPHA * ALPHA * c * o * 4 > WEIGHTS_IN_L2:
        tb = max(MIN_BIG_ROW_TILES * mr, BIG_CHUNK // per_tile // mr * mr)
        chunks = -(-tiles // tb)
        return min(all_rows, -(-tiles // (chunks * mr)) * mr)
    tb = max(mr, CHUNK // per_tile // mr * mr)
    if threads > 1:
        # at least two items per thread when there are enough tiles
        tb = min(tb, max(mr, -(-tiles // (2 * threads)) // mr * mr or mr))
    return min(tb, all_rows)


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
    x_addr, d_addr, tmp_addr = x.ctypes.data, d.ctypes.data, tmp.ctypes.data
    v_addr, mm_addr, s_addr, y_addr = v.ctypes.data, mm.ctypes.data, s.ctypes.data, y.ctypes.data
    out_addr, bias_addr = out.ctypes.data, bias.ctypes.data
    res_addr = res.ctypes.data if res_mode != 0 else out_addr
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        t0 = (item // n_pg) * tb
        nt = min(tb, tiles - t0)
        p0 = (item % n_pg) * pg
        p1 = min(npanels, p0 + pg)
        c0 = p0 * NR
        c1 = min(o, p1 * NR)
        if nt < tb:
            v[:, nt:, :] = 0.0  # the GEMM's last row tile reads up to a multiple of MR
        # 1. input transform: V[xi, t, :] = (B^T d B)[xi], 16 channels per lane call: over the
        # tile's six rows (read in place for an interior tile), then over each result's columns
        for t in range(nt):
            tile = t0 + t
            b = tile // (th * tw)
            r = tile % (th * tw)
            y0 = (r // tw) * M_OUT - pt
            x0 = (r % tw) * M_OUT - pl
            if y0 >= 0 and x0 >= 0 and y0 + ALPHA <= h and x0 + ALPHA <= wd:
                src, pitch = x_addr + (((b * h + y0) * wd + x0) * c) * 4, wd * c
            else:
                for i in range(ALPHA):
                    iy = y0 + i
                    for j in range(ALPHA):
                        ix = x0 + j
                        dij = d[i, j]
                        if 0 <= iy < h and 0 <= ix < wd:
                            xij = x[b, iy, ix]
                            for ch in range(c):
                                dij[ch] = xij[ch]
                        else:
                            dij[:] = 0.0
                src, pitch = d_addr, run
            for j in range(ALPHA):
                for ch in range(0, c, 16):
                    off = (j * c + ch) * 4
                    bt_lanes(src + off, pitch, tmp_addr + off, run, min(16, c - ch))
            for a in range(ALPHA):
                for ch in range(0, c, 16):
                    bt_lanes(tmp_addr + (a * run + ch) * 4, c,
                             v_addr + ((a * ALPHA * tb + t) * c + ch) * 4, tb * c,
                             min(16, c - ch))  # fmt: skip
        # 2. 36 GEMMs on the register tile: M[xi] = V[xi] @ U[xi]
        rows = (nt + MR - 1) // MR
        for xi in range(ALPHA * ALPHA):
            for p in range(p0, p1):
                b_addr = u[xi, p].ctypes.data
                for rt in range(rows):
                    a_addr = v[xi].ctypes.data + rt * MR * c * 4
                    c_addr = mm[xi].ctypes.data + (rt * MR * opad + p * NR) * 4
                    # the panel's first pass reads it from memory at batch 1: ask ahead
                    tile_f32(a_addr, c, b_addr, NR, c, c_addr, opad, zb, zb, 0,
                             _NEG_INF, _POS_INF, B_AHEAD if rt == 0 else 0, 0)  # fmt: skip
        # 3. output transform, bias and epilogue: Y = A^T M A, 16 channels per lane call: over
        # the six rows of M (the item's output channels), then over the columns of each result
        for t in range(nt):
            tile = t0 + t
            b = tile // (th * tw)
            r = tile % (th * tw)
            oy0 = (r // tw) * M_OUT
            ox0 = (r % tw) * M_OUT
            for j in range(ALPHA):
                for oc in range(c0, c1, 16):
                    at_lanes(mm_addr + ((j * tb + t) * opad + oc) * 4, ALPHA * tb * opad,
                             s_addr + (j * o + oc) * 4, ALPHA * o, min(16, c1 - oc))  # fmt: skip
            nout = min(M_OUT, ow - ox0)
            for a in range(M_OUT):
                oy = oy0 + a
                if oy >= oh:
                    continue
                pix = (b * oh + oy) * ow + ox0
                if act == 0:  # the epilogue in the lanes, stored straight into the output
                    for oc in range(c0, c1, 16):
                        at_store_lanes(s_addr + (a * ALPHA * o + oc) * 4, o,
                                       out_addr + (pix * o + oc) * 4, o, min(16, c1 - oc),
                                       bias_addr + oc * 4, res_addr + (pix * o + oc) * 4, o,
                                       lo, hi, res_mode, nout)  # fmt: skip
                    continue
                for oc in range(c0, c1, 16):
                    at_lanes(s_addr + (a * ALPHA * o + oc) * 4, o, y_addr + oc * 4, o,
                             min(16, c1 - oc))  # fmt: skip
                for bb in range(nout):
                    ox = ox0 + bb
                    dst = out[b, oy, ox]
                    r = res[b, oy, ox] if res_mode != 0 else dst
                    mathf.epilogue_row(y[bb, c0:c1], bias[c0:c1], r[c0:c1], dst[c0:c1], lo, hi,
                                       act, res_mode)  # fmt: skip
    # the scratch is used through raw addresses: alive until here (microkernel.keep_alive)
    keep_alive(v)
    keep_alive(mm)
    keep_alive(d)
    keep_alive(tmp)
    keep_alive(s)
    keep_alive(y)
