"""The depthwise register-tile kernel (``depthwise_tiled``): six-pixel runs taken
``isa.DW_NV`` channel vectors at a time and one-pixel tiles (borders, row tails) four at a
time, against a float64 reference; an output that overwrites its residual gives the same bits
as one written elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import reduction_bound
from cuvil_kernels_cpu.kernels import depthwise_tiled as dwt
from cuvil_kernels_cpu.kernels.atomics import WORDS
from cuvil_kernels_cpu.kernels.isa import DW_NV
from cuvil_kernels_cpu.kernels.microkernel import RES_BEFORE


def _reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int) -> np.ndarray:
    n, h, wd, c = x.shape
    xp = np.zeros((n, h + 2, wd + 2, c))
    xp[:, 1:-1, 1:-1] = x
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    out = np.zeros((n, oh, ow, c)) + bias
    for i in range(3):
        for j in range(3):
            rows = slice(i, i + (oh - 1) * stride + 1, stride)
            cols = slice(j, j + (ow - 1) * stride + 1, stride)
            out += xp[:, rows, cols] * w[i, j].astype(np.float64)
    return out


def _run(x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int, res: np.ndarray | None,
         out: np.ndarray) -> np.ndarray:  # fmt: skip
    geom = np.array([3, 3, stride, stride, 1, 1, 1, 1, 1], np.int64)
    mode = RES_BEFORE if res is not None else 0
    r = res if res is not None else out
    dwt.depthwise_tiled(x, w, bias, r, out, geom, np.float32(-np.inf), np.float32(np.inf), 0,
                        mode, np.zeros(WORDS, np.int64))  # fmt: skip
    return out


# (H, W, C, stride): 144 channels are nine vectors (runs of DW_NV, one-pixel tiles of four and
# one); W = 15 leaves a three-pixel tail after two six-pixel runs; W = 5 has no six-pixel run.
@pytest.mark.parametrize("h,w,c,stride", [(7, 15, 144, 1), (9, 13, 48, 2), (4, 5, 96, 1)])
def test_runs_and_one_pixel_tiles_match_the_reference(
    h: int, w: int, c: int, stride: int, rng: np.random.Generator
) -> None:
    x = rng.standard_normal((2, h, w, c)).astype(np.float32)
    wt = rng.standard_normal((3, 3, c)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    out = np.full((2, (h - 1) // stride + 1, (w - 1) // stride + 1, c), np.nan, np.float32)
    got = _run(x, wt, bias, stride, None, out)
    want = _reference(x, wt, bias, stride)
    assert np.abs(got - want).max() <= reduction_bound(9, want)
    assert DW_NV in (1, 4)


def test_an_output_that_overwrites_its_residual_gives_the_same_bits(
    rng: np.random.Generator,
) -> None:
    """In place, a row's tail runs as one-pixel tiles (no overlapping six-pixel tile that would
    read a residual already overwritten)."""
    x = rng.standard_normal((1, 6, 15, 144)).astype(np.float32)
    wt = rng.standard_normal((3, 3, 144)).astype(np.float32)
    bias = rng.standard_normal(144).astype(np.float32)
    res = rng.standard_normal((1, 6, 15, 144)).astype(np.float32)
    apart = _run(x, wt, bias, 1, res, np.full_like(res, np.nan))
    shared = res.copy()
    in_place = _run(x, wt, bias, 1, shared, shared)
    np.testing.assert_array_equal(in_place, apart)
    want = _reference(x, wt, bias, 1) + res
    assert np.abs(apart - want).max() <= reduction_bound(10, want)
