"""The register tiles: float32 tile with its epilogue, exact int8 tile."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import direct, gemm, qgemm
from cuvil_kernels_cpu.kernels.isa import B_PREFETCH, K_STEP_I8, MR, MR_I8, NR, NR_I8
from cuvil_kernels_cpu.kernels.microkernel import B_AHEAD, RES_AFTER, RES_BEFORE, tile_f32
from cuvil_kernels_cpu.kernels.tile_int8 import tile_u8s8


@numba.njit
def _run_f32(a, b, c, bias, res, lo, hi, flags):  # type: ignore[no-untyped-def]
    k = a.shape[1]
    tile_f32(a.ctypes.data, k, b.ctypes.data, NR, k, c.ctypes.data, NR, bias.ctypes.data,
             res.ctypes.data, NR, lo, hi, flags, 0)  # fmt: skip


@numba.njit
def _run_u8(a, b, c):  # type: ignore[no-untyped-def]
    tile_u8s8(a.ctypes.data, a.shape[1], b.ctypes.data, a.shape[1] // K_STEP_I8, c.ctypes.data,
              NR_I8)  # fmt: skip


def _f32_case(rng: np.random.Generator, k: int) -> tuple[np.ndarray, ...]:
    a = rng.standard_normal((MR, k)).astype(np.float32)
    b = rng.standard_normal((k, NR)).astype(np.float32)
    bias = rng.standard_normal(NR).astype(np.float32)
    res = rng.standard_normal((MR, NR)).astype(np.float32)
    return a, b, bias, res


def test_tile_f32_with_each_residual_order(rng: np.random.Generator) -> None:
    a, b, bias, res = _f32_case(rng, 37)
    z = a.astype(np.float64) @ b + bias
    for flags, want in (
        (0, np.maximum(z, 0)),
        (RES_BEFORE, np.maximum(z + res, 0)),
        (RES_AFTER, np.maximum(z, 0) + res),
    ):
        c = np.empty((MR, NR), np.float32)
        _run_f32(a, b, c, bias, res, np.float32(0), np.float32(np.inf), flags)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_tile_f32_prefetching_ahead_gives_the_same_bits(rng: np.random.Generator) -> None:
    # B_AHEAD selects the second copy of the k loop (with prefetches): the same sums, the
    # same epilogue -- also with the residual bits set beside it
    a, b, bias, res = _f32_case(rng, 300)
    for flags in (0, RES_BEFORE, RES_AFTER):
        plain, ahead = np.empty((MR, NR), np.float32), np.empty((MR, NR), np.float32)
        _run_f32(a, b, plain, bias, res, np.float32(-1), np.float32(1), flags)
        _run_f32(a, b, ahead, bias, res, np.float32(-1), np.float32(1), flags | B_AHEAD)
        np.testing.assert_array_equal(plain, ahead)


@pytest.mark.skipif(B_PREFETCH == 0, reason="the B prefetch is off on this host (isa.B_PREFETCH)")
def test_tile_f32_emits_the_prefetch_where_it_is_on(rng: np.random.Generator) -> None:
    a, b, bias, res = _f32_case(rng, 8)
    _run_f32(a, b, np.empty((MR, NR), np.float32), bias, res, np.float32(-1), np.float32(1), 0)
    asm = _run_f32.inspect_asm(_run_f32.signatures[0])
    assert re.search(r"\bprefetcht0\b", asm), "the tile's B_AHEAD loop lost its prefetch"


def test_tile_f32_clamp_keeps_nan_and_k0_gives_bias(rng: np.random.Generator) -> None:
    a, b, bias, res = _f32_case(rng, 5)
    a[2, 3] = np.nan
    c = np.empty((MR, NR), np.float32)
    _run_f32(a, b, c, bias, res, np.float32(0), np.float32(6), 0)
    assert np.isnan(c[2]).all() and not np.isnan(np.delete(c, 2, axis=0)).any()
    assert np.nanmax(c) <= 6 and np.nanmin(c) >= 0
    empty = np.zeros((MR, 0), np.float32)
    _run_f32(empty, np.zeros((0, NR), np.float32), c, bias, res, np.float32(-np.inf),
             np.float32(np.inf), 0)  # fmt: skip
    np.testing.assert_array_equal(c, np.broadcast_to(bias, c.shape))


def test_tile_u8s8_is_exact_at_the_extremes(rng: np.random.Generator) -> None:
    """Bit-exact int32 sums at the extreme bytes, on the host's tile (VNNI bytes or AVX2 int16
    pairs: a pair of 255 * -128 products is beyond int16, where vpmaddubsw would saturate)."""
    k4 = 300  # K = 1200: 1200 * 255 * 128 is far beyond float32's exact range
    a = rng.integers(0, 256, (MR_I8, 4 * k4)).astype(np.uint8)
    a[0] = 255
    w = rng.integers(-128, 128, (4 * k4, NR_I8)).astype(np.int8)
    w[:, 0] = -128
    packed = qgemm.pack_weights(w[None])[0, 0]  # [steps, NR_I8, K_STEP_I8] of this host
    c = np.empty((MR_I8, NR_I8), np.int32)
    _run_u8(a, packed, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ w.astype(np.int64))
    assert c[0, 0] == 255 * -128 * 4 * k4


@numba.njit
def _run_seg(nv, nrows, a, lda, b, k, nseg, sa, c, bias, res, flags):  # type: ignore[no-untyped-def]
    lo, hi = np.float32(-np.inf), np.float32(np.inf)
    a_, b_, c_, bias_, res_ = a.ctypes.data, b.ctypes.data, c.ctypes.data, bias.ctypes.data, (
        res.ctypes.data)  # fmt: skip
    direct.tile_seg(nv, nrows, a_, lda, b_, k, c_, NR, bias_, res_, NR, lo, hi, flags, nseg, sa)


@numba.njit
def _run_by_segment(nrows, a, lda, b, k, nseg, sa, c, bias, res, flags):  # type: ignore[no-untyped-def]
    lo, hi = np.float32(-np.inf), np.float32(np.inf)
    acc = np.empty((MR, NR), np.float32)
    zero = np.zeros(NR, np.float32)
    for s in range(nseg):
        init = 0 if s == 0 else acc.ctypes.data
        a_s = a.ctypes.data + s * sa * 4
        b_s = b.ctypes.data + s * k * NR * 4
        if s < nseg - 1:
            gemm.tile_rows(nrows, a_s, lda, b_s, k, acc.ctypes.data, NR, zero.ctypes.data,
                           zero.ctypes.data, 0, lo, hi, 0, init)  # fmt: skip
        else:
            gemm.tile_rows(nrows, a_s, lda, b_s, k, c.ctypes.data, NR, bias.ctypes.data,
                           res.ctypes.data, NR, lo, hi, flags, init)  # fmt: skip


def test_segmented_tile_equals_one_call_per_segment(rng: np.random.Generator) -> None:
    """The segmented tile (a direct convolution's kernel rows in one call): ``nseg`` segments
    of ``k`` A columns ``sa`` apart, B read on contiguously, equal bit for bit to one call per
    segment chained through stored partial sums, for 1 to MR rows, narrower panels, and
    against float64."""
    k, nseg, lda, sa = 7, 3, 50, 13  # rows of A 50 apart, segments 13 apart: overlapping reads
    a = rng.standard_normal(MR * lda + nseg * sa + k).astype(np.float32)
    b = rng.standard_normal((nseg * k, NR)).astype(np.float32)
    bias = rng.standard_normal(NR).astype(np.float32)
    res = rng.standard_normal((MR, NR)).astype(np.float32)
    want = np.zeros((MR, NR))
    for s in range(nseg):
        rows = np.stack([a[r * lda + s * sa : r * lda + s * sa + k] for r in range(MR)])
        want += rows.astype(np.float64) @ b[s * k : (s + 1) * k]
    want = want + bias + res
    for nrows in range(1, MR + 1):
        one = np.full((MR, NR), np.nan, np.float32)
        chained = np.full((MR, NR), np.nan, np.float32)
        _run_seg(NR // 16, nrows, a, lda, b, k, nseg, sa, one, bias, res, RES_BEFORE)
        _run_by_segment(nrows, a, lda, b, k, nseg, sa, chained, bias, res, RES_BEFORE)
        np.testing.assert_array_equal(one, chained)
        np.testing.assert_allclose(one[:nrows], want[:nrows], rtol=1e-5, atol=1e-5)
        assert np.isnan(one[nrows:]).all()  # rows past the tile untouched
    for nv in range(1, NR // 16):
        narrow = np.full((MR, NR), np.nan, np.float32)
        _run_seg(nv, MR, a, lda, b, k, nseg, sa, narrow, bias, res, RES_BEFORE)
        np.testing.assert_allclose(narrow[:, : 16 * nv], want[:, : 16 * nv], rtol=1e-5,
                                   atol=1e-5)  # fmt: skip
        assert np.isnan(narrow[:, 16 * nv :]).all()
