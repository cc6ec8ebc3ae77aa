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

A panel narrower than the tile (``O`` not a multiple of 16) is stored in place with masked
moves; tiles cut by the last rows of the output are computed into a small buffer and copied
with the same epilogue.

With ``kc > 0`` (:func:`k_block`) the full tiles of a panel take K in chunks of ``kc`` rows:
every row tile of the item runs one chunk before any runs the next, so the chunk of the B panel
(``kc * NR`` floats, 32 KiB at ``kc = 128``) stays in L1 while all of them read it, instead of
each tile streaming the whole ``K * NR`` panel from L2. A tile's partial sums wait in a small
per-thread scratch between chunks and are reloaded as the next chunk's starting accumulators
(the micro-kernel's ``init``); the k order of every sum is unchanged, so the result is
bit-identical to one pass over K. Bias, residual and activation are applied on the last chunk.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.gather import gather_rows
from cuvil_kernels_cpu.kernels.isa import K_CHUNKS, MR, NR, NV, kernel, l1d_bytes, serial_kernel
from cuvil_kernels_cpu.kernels.microkernel import (
    B_AHEAD,
    RES_AFTER,
    RES_BEFORE,
    prefetch_l2,
    tile_f32_1,
    tile_f32_2,
    tile_f32_3,
    tile_f32_4,
    tile_f32_half,
    tile_f32_masked_1,
    tile_f32_masked_2,
    tile_f32_masked_3,
    tile_f32_masked_4,
    tile_f32_r1,
    tile_f32_r2,
    tile_f32_r3,
    tile_f32_r4,
    tile_f32_r5,
)

#: res_mode values
RES_NONE = 0

_NEG_INF = np.float32(-np.inf)
_POS_INF = np.float32(np.inf)

#: Bytes an item's A block, and its group of B panels, may use (each should stay in L2).
L2_BLOCK = 1 << 20

#: Whether a non-clamp activation (GELU, SiLU...) runs once over an item's full rows after all
#: its panels, instead of over each tile as it is stored. With the 16-column AVX2 tile a
#: per-tile call is 6 loops of 16 values, which the vectorizer serves poorly: GELU took 3.03 ns
#: a value that way against 2.34 over long rows (one thread, AMD EPYC Zen 2, 2026-12-07); the
#: item's rows are then in L2, which GELU's arithmetic does not notice. With AVX-512 (64-column
#: tiles) the per-tile order stays: the two were not compared there.
DEFER_ACTIVATION = NV == 1

#: Whether an item runs each row tile across its panels (the A tile stays in L1, the item's
#: panels in L2) rather than each panel down its row tiles (the panel in L1, the A block in
#: L2), where its panels take at most ROWS_OUTER_PANELS bytes; where K is taken in chunks the
#: order is always panel by panel. Measured on the AMD EPYC (Zen 2, 512 KiB L2, 2026-12-07),
#: the model's GEMM steps switched to a copy of the kernel in one process, alternating, three
#: rounds against ORT: with every item across its panels, ResNet-50 b1 0.5-0.9 % faster but
#: BERT-base 0.5-1.0 % slower (its FFN panels are 192 KiB each, so an item's panels do not
#: stay in L2 across its row tiles). Not measured with AVX-512 (64-column panels): off there.
ROWS_OUTER = NV == 1
ROWS_OUTER_PANELS = 256 * 1024

#: Whether a panel's last 8 columns (``O = 24``: MobileNetV2's projections) run on an 8-lane
#: tile stored unmasked (``microkernel.tile_f32_half``) rather than the 16-lane tile with half
#: its lanes masked off. Only with the 16-column AVX2 tile (not measured with AVX-512, whose
#: masked stores are cheap).
HALF_TAIL = NV == 1

#: Smallest K chunk worth a pass of its own: below it the partial sums' extra loads and stores
#: and the tile's call cost outweigh what L1 saves.
MIN_K_BLOCK = 128


def k_block(k: int, l1: int | None = None, nr: int = NR) -> int:
    """Rows of K a tile pass takes from a B panel (:func:`conv_gemm`'s ``kc``); 0 for one pass.

    Blocking pays only where a whole panel (``k * nr`` floats) does not fit in one core's L1
    data cache. Then a chunk may take two thirds of L1 (the rest holds the A rows' broadcasts
    and the tile's partial sums), at least :data:`MIN_K_BLOCK` rows (else blocking is off), and
    K is cut into equal chunks of at most that (a multiple of 4), so no pass is left short.
    Measured on BERT-base's linear layers (2026-12-05, Intel Xeon, 48 KiB L1, so ``kc`` =
    128): with the next chunk prefetched, 16-20 % faster single-threaded than one pass and
    11-18 % on two threads with weights not in cache, and ``kc`` 192 or 256 (48 and 64 KiB)
    gave back most of it. On an AMD EPYC with 32 KiB of L1 (the rule gives 0 there) K chunks of
    64-256 without the prefetch measured 2-10 % slower (2026-12-02), so it stays off; with
    the AVX2 tile (``nr`` 16) the rule gives chunks, which :func:`plan_gemm` does not take
    there (``isa.K_CHUNKS``).
    """
    l1 = l1d_bytes() if l1 is None else l1
    return 0 if k * nr * 4 <= l1 else equal_chunks(k, l1, nr)


def equal_chunks(k: int, l1: int, nr: int = NR) -> int:
    """Rows per chunk when ``k`` rows of an ``nr``-wide panel are cut into equal chunks of at
    most two thirds of ``l1`` bytes (a multiple of 4 rows); 0 where such a chunk would be
    under :data:`MIN_K_BLOCK` rows. Shared by :func:`k_block` and the direct convolution's."""
    row = nr * 4
    kc_max = (2 * l1 // 3) // row // 32 * 32
    if kc_max < MIN_K_BLOCK:
        return 0
    chunks = -(-k // kc_max)
    return (-(-k // chunks) + 3) // 4 * 4


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


def plan_items(m: int, k: int, npanels: int, threads: int, elem: int = 4,
               nr: int = NR, mr: int = MR, max_tiles: int = 0) -> tuple[int, int]:  # fmt: skip
    """(row tiles per item, panels per item) that minimize memory traffic.

    An item reads its A block once per panel group and its B panels once per row block, so the
    traffic is ``n_row_blocks * |B| + n_panel_groups * |A|``; blocks must fit L2 (about 1 MB
    each) and there must be work for every thread (two items per thread when there are
    several, so a late thread finds some left). ``elem``: bytes per element (1 for int8);
    ``max_tiles``: at most that many row tiles an item (0: no limit)."""
    tiles = -(-m // mr)
    if tiles == 0 or npanels == 0:
        return 1, max(1, npanels)
    a_bytes, b_bytes = m * k * elem, k * npanels * nr * elem
    want = 1 if threads <= 1 else 2 * threads
    mb_max = max(1, L2_BLOCK // max(1, mr * k * elem))
    if max_tiles > 0:
        mb_max = min(mb_max, max_tiles)
    best: tuple[float, int, int] | None = None
    for n_pg in range(1, npanels + 1):
        pg = -(-npanels // n_pg)
        n_pg = -(-npanels // pg)
        if pg > 1 and pg * k * nr * elem > L2_BLOCK:
            continue
        n_mb = -(-tiles // mb_max)
        if n_mb * n_pg < want:
            n_mb = min(tiles, -(-want // n_pg))
        mb = -(-tiles // n_mb)
        n_mb = -(-tiles // mb)
        cost = n_mb * b_bytes + n_pg * a_bytes + (0 if n_mb * n_pg >= want else 1e18)
        if best is None or cost < best[0]:
            best = (cost, mb, pg)
    assert best is not None
    return best[1], best[2]


def plan_gemm(m: int, k: int, npanels: int, threads: int,
              l1: int | None = None) -> tuple[int, int, int]:  # fmt: skip
    """``(mb, pg, kc)`` for :func:`conv_gemm`: :func:`plan_items` and :func:`k_block` (on hosts
    where K chunks pay, ``isa.K_CHUNKS``), with
    items of at most ``L1 / (MR * NR * 4)`` row tiles where K is taken in chunks (32 on a
    48 KiB L1): an item's partial sums then stay near L1 between chunks, and a large layer
    makes more, smaller items for the threads to share. Measured on ResNet-50's 1x1 layers
    (2 threads, 2026-12-05, twice): 56x56 256 -> 64 0.52 -> 0.44 ms (131 -> 31 tiles an item),
    28x28 512 -> 128 0.51 -> 0.43 (33 -> 27), the others (at most 33 tiles) unchanged."""
    l1 = l1d_bytes() if l1 is None else l1
    kc = k_block(k, l1) if K_CHUNKS else 0
    cap = max(1, l1 // (MR * NR * 4)) if kc > 0 else 0
    mb, pg = plan_items(m, k, npanels, threads, max_tiles=cap)
    return mb, pg, kc


@serial_kernel
def tile_nv(nv, a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init):  # type: ignore[no-untyped-def]
    """The register tile with ``nv`` column vectors (a narrower last panel: 16, 32, 48)."""
    if nv >= 4:
        tile_f32_4(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nv == 3:
        tile_f32_3(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nv == 2:
        tile_f32_2(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    else:
        tile_f32_1(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init)


@serial_kernel
def tile_nv_masked(nv, a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, tail):  # type: ignore[no-untyped-def]  # noqa: E501
    """:func:`tile_nv` storing (and reading the residual of) only ``tail`` lanes of the last
    column vector."""
    if nv >= 4:
        tile_f32_masked_4(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, tail)
    elif nv == 3:
        tile_f32_masked_3(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, tail)
    elif nv == 2:
        tile_f32_masked_2(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, tail)
    else:
        tile_f32_masked_1(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, 0, tail)


@serial_kernel
def tile_rows(nrows, a, lda, b, k, c, ldc, bias, res, ldr, lo, hi, flags, init):  # type: ignore[no-untyped-def]
    """The full-width register tile of ``nrows`` rows (1 to ``MR``)."""
    if nrows >= MR:
        tile_nv(NV, a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nrows == 1:
        tile_f32_r1(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nrows == 2:
        tile_f32_r2(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nrows == 3:
        tile_f32_r3(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    elif nrows == 4:
        tile_f32_r4(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)
    else:
        tile_f32_r5(a, lda, b, NR, k, c, ldc, bias, res, ldr, lo, hi, flags, init)


@serial_kernel
def tile_edge(nv, nrows, a, lda, b, k, tmp, bias):  # type: ignore[no-untyped-def]
    """``tmp[:nrows] = a[:nrows] @ b + bias`` for the last ``nrows < MR`` rows of an output
    (``tmp`` is ``MR x NR``; rows past ``nrows`` are left as they are). A full-width panel
    runs the tile of exactly ``nrows`` rows (M = 128 is 21 tiles of 6 and one of 2: the
    full tile would compute 3 % more); a narrower one the ``nv``-vector tile of MR rows,
    which is then cheaper."""
    inf = np.float32(np.inf)
    if nv == NR // 16 and nrows < MR:
        tile_rows(nrows, a, lda, b, k, tmp, NR, bias, bias, 0, -inf, inf, 0, 0)
    else:
        tile_nv(nv, a, lda, b, NR, k, tmp, NR, bias, bias, 0, -inf, inf, 0, 0)


@serial_kernel
def _finish_tile(out2, row0, nrows, col0, ncols, res2, act, res_mode):  # type: ignore[no-untyped-def]
    """The non-clamp activation (and a residual added after it) over a stored tile."""
    mathf.activate_block(out2, row0, nrows, col0, ncols, res2, act, res_mode == RES_AFTER)


@serial_kernel
def _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode):  # type: ignore[no-untyped-def]
    """Copy the valid part of a tile computed into ``tmp`` (bias already added) with the
    epilogue: residual, clamp or activation, residual, in the order of ``res_mode``."""
    zero = np.zeros(ncols, np.float32)
    for i in range(nrows):
        dst = out2[row0 + i, col0 : col0 + ncols]
        r = res2[row0 + i, col0 : col0 + ncols] if res_mode != RES_NONE else dst
        mathf.epilogue_row(tmp[i, :ncols], zero, r, dst, lo, hi, act, res_mode)


@serial_kernel
def _full_tiles_k_blocked(a_addr, k, kc, ntiles, b_addr, out_addr, o, row0, col0, bias_addr,
                          res_addr, res_mode, klo, khi, kflags, post, out2, res2, act, part,
                          zero):  # type: ignore[no-untyped-def]  # fmt: skip
    """``ntiles`` full tiles (``MR`` rows each from ``row0``, A rows at ``a_addr`` with stride
    ``k``) of one full-width panel, K in chunks of ``kc`` (module docstring): chunks before the
    last store partial sums into ``part`` (``[ntiles, MR, NR]``) with a zero bias and no clamp;
    the last starts from them and applies the epilogue into the output."""
    inf = np.float32(np.inf)
    zero_addr = zero.ctypes.data
    part_addr = part.ctypes.data
    for k0 in range(0, k, kc):
        kk = min(kc, k - k0)
        b = b_addr + k0 * NR * 4
        last = k0 + kk >= k
        # The chunk after this one (the next panel's first after the last) follows it in
        # memory: each tile pass asks for its share of those lines into L2, so a weight read
        # once per inference arrives while this chunk computes instead of stalling the next.
        ahead = b + kk * NR * 4
        lines = (kc * NR * 4) // 64
        per_tile = (lines + ntiles - 1) // max(1, ntiles)
        for t in range(ntiles):
            for q in range(t * per_tile, min(lines, (t + 1) * per_tile)):
                prefetch_l2(ahead + q * 64)
            a = a_addr + (t * MR * k + k0) * 4
            pt = part_addr + t * MR * NR * 4
            init = 0 if k0 == 0 else pt
            if not last:
                tile_nv(NV, a, k, b, NR, kk, pt, NR, zero_addr, zero_addr, 0, -inf, inf, 0, init)
                continue
            r = row0 + t * MR
            c_addr = out_addr + (r * o + col0) * 4
            r_addr = res_addr + (r * o + col0) * 4 if res_mode != RES_NONE else bias_addr
            tile_nv(NV, a, k, b, NR, kk, c_addr, o, bias_addr, r_addr, o, klo, khi, kflags, init)
            if post:
                _finish_tile(out2, r, MR, col0, NR, res2, act, res_mode)


@kernel
def conv_gemm(x, wp, bias, res, out, geom, lo, hi, act, res_mode, direct, mb, pg, kc, work):  # type: ignore[no-untyped-def]
    """out[N, OH, OW, O] = epilogue(conv(x[N, H, W, C], weights) + bias) (module docstring).

    ``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw); ``direct``: read A rows from ``x`` itself
    (1x1, stride 1, no padding, one group); ``res`` is ``[N, OH, OW, O]`` or unused
    (``res_mode`` 0); ``act`` an ``mathf.ACT_*`` code applied after the ``lo``/``hi`` clamp;
    ``kc``: K chunk of the full tiles (:func:`k_block`; 0 for one pass over K)."""
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
    # With the 16-column tile the activation runs once over the item's full rows after its
    # panels (DEFER_ACTIVATION), not per tile
    defer = post and DEFER_ACTIVATION
    tile_post = post and not defer
    kflags = res_mode
    klo, khi = lo, hi
    if post:
        # The micro-kernel adds a residual that comes before the activation; the activation and
        # a residual after it are applied over the stored tile.
        kflags = RES_BEFORE if res_mode == RES_BEFORE else 0
        klo, khi = _NEG_INF, _POS_INF
    n_items = n_mb * n_pg * groups
    # Scratch once per call (per thread), not per item: a fresh block of up to 1 MB per item
    # cost page faults that two threads take in turn (see kernels/winograd.py).
    tmp = np.empty((MR, NR), np.float32)
    abuf_all = np.empty((MR if direct else mb * MR, k), np.float32)
    part = np.empty((mb if kc > 0 else 1, MR, NR), np.float32)
    zero = np.zeros(NR, np.float32)
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
        r0 = t0 * MR
        rows = min(m, t1 * MR) - r0
        if direct:
            abuf = abuf_all
            a_addr = x_addr + r0 * cin * 4
            last0 = r0 + (t1 - t0 - 1) * MR
            if m - last0 < MR:
                # The last rows of the input, staged once per item (not once per panel) so the
                # tile never reads past x: a batch-1 linear layer is one such tile per panel.
                for i in range(MR):
                    for c in range(k):
                        abuf[i, c] = x2[last0 + i, c] if last0 + i < m else 0.0
        else:
            abuf = abuf_all[: (t1 - t0) * MR]
            gather_rows(x, abuf, r0, rows, g, geom, oh, ow)
            a_addr = abuf.ctypes.data
        p_end = min(npanels, (bp + 1) * pg)
        n_p, n_t = p_end - bp * pg, t1 - t0
        # Panel by panel down the row tiles, or (ROWS_OUTER, K in one pass) each row tile
        # across the panels: the same tile calls in another order.
        rows_outer = ROWS_OUTER and kc <= 0 and n_p * k * NR * 4 <= ROWS_OUTER_PANELS
        for step in range(n_p * n_t):
            if rows_outer:
                t, p = step // n_p, bp * pg + step % n_p
            else:
                t, p = step % n_t, bp * pg + step // n_t
            col0 = g * og + p * NR
            ncols = min(NR, og - p * NR)
            b_addr = wp[g, p].ctypes.data
            bias_addr = bias.ctypes.data + (g * npanels + p) * NR * 4
            nv = (ncols + 15) // 16
            blocked = kc > 0 and ncols == NR
            if blocked and t == 0:
                nfull = min(t1 - t0, (m - r0) // MR)
                _full_tiles_k_blocked(a_addr, k, kc, nfull, b_addr, out_addr, o, r0, col0,
                                      bias_addr, res_addr, res_mode, klo, khi, kflags, tile_post,
                                      out2, res2, act, part, zero)  # fmt: skip
            row0 = r0 + t * MR
            nrows = min(MR, m - row0)
            if blocked and nrows == MR:
                continue  # done above
            a_tile = a_addr + t * MR * k * 4
            if direct and nrows < MR:
                a_tile = abuf.ctypes.data  # staged above
            if nrows == MR:
                c_addr = out_addr + (row0 * o + col0) * 4
                r_addr = res_addr + (row0 * o + col0) * 4 if res_mode != RES_NONE else bias_addr
                # the item's first pass over the panel reads it from memory: ask ahead
                fl = kflags | B_AHEAD if t == 0 else kflags
                if ncols == nv * 16:
                    tile_nv(nv, a_tile, k, b_addr, NR, k, c_addr, o, bias_addr, r_addr, o,
                            klo, khi, fl, 0)  # fmt: skip
                elif HALF_TAIL and ncols == 8:
                    tile_f32_half(a_tile, k, b_addr, NR, k, c_addr, o, bias_addr, r_addr, o,
                                  klo, khi, fl, 0)  # fmt: skip
                else:
                    tile_nv_masked(nv, a_tile, k, b_addr, NR, k, c_addr, o, bias_addr, r_addr,
                                   o, klo, khi, fl, ncols - (nv - 1) * 16)  # fmt: skip
                if tile_post:
                    _finish_tile(out2, row0, MR, col0, ncols, res2, act, res_mode)
            else:
                tile_edge(nv, nrows, a_tile, k, b_addr, k, tmp.ctypes.data, bias_addr)
                _store_edge(tmp, out2, row0, nrows, col0, ncols, res2, lo, hi, act, res_mode)
        if defer:  # the full tiles' rows (an edge tile had its whole epilogue above)
            full = min(t1 - t0, (m - r0) // MR) * MR
            c_lo = g * og + bp * pg * NR
            c_hi = g * og + min(og, p_end * NR)
            _finish_tile(out2, r0, full, c_lo, c_hi - c_lo, res2, act, res_mode)
