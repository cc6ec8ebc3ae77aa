"""The direct convolution (``conv_direct``): weight passes (``kc``) against tile by tile, the
exact-row last tile of an output row, and the rule that picks ``kc`` from the L1 size."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import direct, gemm, mathf
from cuvil_kernels_cpu.kernels.isa import MR, NR
from cuvil_kernels_cpu.kernels.microkernel import RES_AFTER, RES_BEFORE
from cuvil_kernels_cpu.team import Team


def _run(x: np.ndarray, weight: np.ndarray, stride: int, pad: int, res: np.ndarray | None,
         lo: float, hi: float, act: int, res_mode: int, kc: int,
         threads: int = 1, in_place: bool = False) -> np.ndarray:  # fmt: skip
    """``conv_direct`` on a zero-padded copy of ``x``, or on ``x`` itself (``in_place``: the
    taps in the padding skipped)."""
    n, h, w, c = x.shape
    o, _, kh, kw = weight.shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    shape = direct.padded_shape(n, c, kh, kw, (stride, stride), 1, (pad,) * 4, h, w, oh, ow)
    xp = np.zeros(shape, np.float32)
    xp[:, pad : pad + h, pad : pad + w] = x
    pads = [0, 0]
    if in_place:
        xp, pads = np.ascontiguousarray(x), [pad, pad]
    wp = gemm.pack_weights(gemm.conv_weight_kn(weight, 1))
    bias = gemm.pack_bias(np.linspace(-1, 1, o, dtype=np.float32), 1, o)
    out = np.full((n, oh, ow, o), np.nan, np.float32)
    resb = res if res is not None else np.zeros((1, 1, 1, 1), np.float32)
    rows, pg = direct.plan_rows(n, oh, ow, kh * kw * c, wp.shape[1], threads)
    geom = np.array([kh, kw, stride, stride, 1, *pads], np.int64)
    work = np.zeros(1, np.int64)
    args = (xp, wp, bias, resb, out, geom, np.float32(lo), np.float32(hi), act, res_mode, rows,
            pg, kc, work)  # fmt: skip
    if threads == 1:
        direct.conv_direct(*args)
    else:
        Team(threads).run(lambda: direct.conv_direct(*args), work)
    return out


def _reference(x: np.ndarray, weight: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """float64 convolution plus the bias of :func:`_run` (NHWC)."""
    o, c, kh, kw = weight.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    n, hp, wp, _ = xp.shape
    oh, ow = (hp - kh) // stride + 1, (wp - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += patch @ weight[:, :, i, j].astype(np.float64).T
    return out + np.linspace(-1, 1, o, dtype=np.float32)


@pytest.mark.parametrize("w", [1, MR, 7, 9, 13, 14, 2 * MR + 5, 28])
@pytest.mark.parametrize("o", [NR, 2 * NR, NR + 24])
@pytest.mark.parametrize("kc", [8, 20, 72])
@pytest.mark.parametrize(
    "act,res_mode,lo,hi",
    [(mathf.ACT_NONE, 0, -np.inf, np.inf), (mathf.ACT_NONE, RES_BEFORE, 0.0, np.inf),
     (mathf.ACT_GELU, RES_AFTER, -np.inf, np.inf), (mathf.ACT_NONE, RES_AFTER, -0.5, 1.0)],
)  # fmt: skip
def test_weight_passes_are_bit_identical(w: int, o: int, kc: int, act: int, res_mode: int,
                                         lo: float, hi: float,
                                         rng: np.random.Generator) -> None:  # fmt: skip
    """Passes resume every sum from its stored float32 partial sums in the one-pass k order, so
    the output equals tile by tile bit for bit; row tails of 1 to 5 pixels and a narrow last
    panel included; and both match a float64 convolution."""
    n, h, c = 2, 5, 24  # run = 3 * 24 = 72: kc 8 and 20 cut a kernel row into several passes
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    weight = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    res = rng.standard_normal((n, h, w, o)).astype(np.float32)
    one = _run(x, weight, 1, 1, res, lo, hi, act, res_mode, 0)
    passes = _run(x, weight, 1, 1, res, lo, hi, act, res_mode, kc)
    assert not np.isnan(one).any()
    np.testing.assert_array_equal(passes, one)
    if act == mathf.ACT_NONE:
        want = _reference(x, weight, 1, 1)
        if res_mode == RES_BEFORE:
            want = want + res
        want = np.clip(want, lo, hi)
        if res_mode == RES_AFTER:
            want = want + res
        np.testing.assert_allclose(one, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("stride,k", [(2, 3), (2, 7), (1, 5)])
def test_strided_and_wide_kernels(threads: int, stride: int, k: int,
                                  rng: np.random.Generator) -> None:  # fmt: skip
    """Stride 2 and 5x5/7x7 kernels (ResNet's stem), passes and tile by tile, one thread and
    two, against a float64 convolution."""
    n, h, w, c, o = 1, 15, 17, 20, NR
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    weight = rng.standard_normal((o, c, k, k)).astype(np.float32)
    pad = k // 2
    one = _run(x, weight, stride, pad, None, -np.inf, np.inf, 0, 0, 0, threads)
    passes = _run(x, weight, stride, pad, None, -np.inf, np.inf, 0, 0, 32, threads)
    np.testing.assert_array_equal(passes, one)
    np.testing.assert_allclose(one, _reference(x, weight, stride, pad), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("w", range(1, 60))
def test_row_tiles_cover_the_row(w: int) -> None:
    """Tiles of 1 to MR rows, back to back from 0 to the row's end, heights differing by at
    most one, as few as MR-row tiles allow; no tile under 3 rows past w = 6."""
    tiles, base, extra = direct.row_tiles(w)
    heights = [base + 1 if j < extra else base for j in range(tiles)]
    starts = [j * base + min(j, extra) for j in range(tiles)]
    assert sum(heights) == w and starts[0] == 0
    assert all(s + h == t for s, h, t in zip(starts, heights, starts[1:] + [w], strict=True))
    assert max(heights) <= MR and max(heights) - min(heights) <= 1
    assert tiles == -(-w // MR)
    if w > MR:
        assert min(heights) >= MR // 2


def test_k_block_follows_the_l1_size() -> None:
    """Off where the whole panel fits in L1 or a pass would be under MIN_K_BLOCK rows; else
    each kernel row in equal passes of at most two thirds of L1 (multiples of 4). Checked with
    the AVX-512 panel width (64 columns) on any host."""
    l1 = 48 * 1024
    assert direct.k_block(3, 3 * 64, l1=l1, nr=64) == 96  # 192 rows: two passes of 96
    assert direct.k_block(3, 3 * 512, l1=l1, nr=64) == 128  # 1536 rows: twelve passes of 128
    assert direct.k_block(7, 7 * 3, l1=l1, nr=64) == 0  # the stem's panel (147 rows) fits in L1
    assert direct.k_block(3, 3 * 64, l1=32 * 1024, nr=64) == 0  # a pass would be 64 rows
    for run in (72, 200, 1000, 4608):
        kc = direct.k_block(3, run, l1=l1, nr=64)
        assert kc % 4 == 0 and MR <= kc <= 128
        passes = -(-run // kc)
        assert (passes - 1) * kc < run <= passes * kc


@pytest.mark.parametrize("w", [1, 2, 5, MR, 7, 13, 14, 2 * MR + 5])
@pytest.mark.parametrize("stride,k,pad", [(1, 3, 1), (2, 3, 1), (1, 5, 2), (2, 7, 3), (2, 1, 0),
                                          (1, 3, 0), (1, 3, 2), (2, 3, 3)])  # fmt: skip
@pytest.mark.parametrize("kc", [0, 8, 20])
def test_reading_in_place_is_bit_identical(w: int, stride: int, k: int, pad: int, kc: int,
                                           rng: np.random.Generator) -> None:  # fmt: skip
    """Read in place, a tile whose taps reach into the padding runs only its taps inside the
    input (cut at kernel columns, rows out of the image skipped): with finite weights the same
    sums in the same k order as over the zero-padded copy, bit for bit -- narrow images where
    every tile is an edge tile, padding wider than the kernel's reach (whole rows and columns of
    zeros), weight passes, residual and a clamp included; NaN inputs stay where they were."""
    n, h, c, o = 2, 6, 8, NR
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    x[0, h // 2, w // 2, 1] = np.nan
    weight = rng.standard_normal((o, c, k, k)).astype(np.float32)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    if oh < 1 or ow < 1:
        pytest.skip("no output")
    res = rng.standard_normal((n, oh, ow, o)).astype(np.float32)
    for act, res_mode, lo, hi in ((mathf.ACT_NONE, RES_BEFORE, 0.0, np.inf),
                                  (mathf.ACT_GELU, RES_AFTER, -np.inf, np.inf)):  # fmt: skip
        padded = _run(x, weight, stride, pad, res, lo, hi, act, res_mode, kc)
        in_place = _run(x, weight, stride, pad, res, lo, hi, act, res_mode, kc, in_place=True)
        np.testing.assert_array_equal(in_place, padded)
    clean = np.nan_to_num(x)
    got = _run(clean, weight, stride, pad, None, -np.inf, np.inf, 0, 0, kc, in_place=True)
    np.testing.assert_allclose(got, _reference(clean, weight, stride, pad), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_reading_in_place_threads(threads: int, rng: np.random.Generator) -> None:
    """ResNet-like layers read in place, one thread and two (items of row blocks and panels)."""
    for h, c, o, stride in ((9, 16, 2 * NR, 1), (8, 24, NR, 2)):
        x = rng.standard_normal((2, h, h, c)).astype(np.float32)
        weight = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
        args = (x, weight, stride, 1, None, -np.inf, np.inf, 0, 0, 24, threads)
        np.testing.assert_array_equal(_run(*args, in_place=True), _run(*args))
