"""The last rows of a GEMM output (M not a multiple of MR) on tiles of exactly that many rows,
and the last 8 columns of a panel on the 8-lane tile."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from conftest import reduction_bound
from cuvil_kernels_cpu.kernels.gemm import tile_edge
from cuvil_kernels_cpu.kernels.isa import MR, NR
from cuvil_kernels_cpu.kernels.microkernel import RES_BEFORE, tile_f32, tile_f32_half
from helpers import both

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType


@numba.njit
def _edge(nv, nrows, a, b, tmp, bias):  # type: ignore[no-untyped-def]
    tile_edge(nv, nrows, a.ctypes.data, a.shape[1], b.ctypes.data, a.shape[1], tmp.ctypes.data,
              bias.ctypes.data)  # fmt: skip


@numba.njit
def _full(a, b, c, bias):  # type: ignore[no-untyped-def]
    inf = np.float32(np.inf)
    tile_f32(a.ctypes.data, a.shape[1], b.ctypes.data, NR, a.shape[1], c.ctypes.data, NR,
             bias.ctypes.data, bias.ctypes.data, 0, -inf, inf, 0, 0)  # fmt: skip


@numba.njit
def _tiles(a, b, c, bias, res, lo, hi, flags, half):  # type: ignore[no-untyped-def]
    args = (a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1], a.shape[1], c.ctypes.data,
            c.shape[1], bias.ctypes.data, res.ctypes.data, res.shape[1], lo, hi, flags, 0)
    if half:
        tile_f32_half(*args)
    else:
        tile_f32(*args)


def test_half_tile_gives_the_full_tiles_first_eight_columns(rng: np.random.Generator) -> None:
    """Same FMA chain per column, same epilogue (bias, residual, clamp): equal bits; the 8-lane
    tile writes 8 columns only."""
    k = 53
    a = rng.standard_normal((MR, k)).astype(np.float32)
    b = rng.standard_normal((k, NR)).astype(np.float32)
    bias = rng.standard_normal(NR).astype(np.float32)
    res = rng.standard_normal((MR, NR)).astype(np.float32)
    lo, hi = np.float32(-4.0), np.float32(3.0)
    want = np.empty((MR, NR), np.float32)
    _tiles(a, b, want, bias, res, lo, hi, RES_BEFORE, False)
    got = np.full((MR, NR), 7.0, np.float32)
    _tiles(a, b, got, bias, res, lo, hi, RES_BEFORE, True)
    assert np.array_equal(got[:, :8], want[:, :8])
    assert (got[:, 8:] == 7.0).all()


@pytest.mark.parametrize("nrows", range(1, MR))
def test_edge_tile_is_bit_identical_to_the_full_tile(nrows: int, rng: np.random.Generator) -> None:
    """Each row's sum is the same FMA chain in the same order, so the results are equal."""
    k = 77
    a = np.zeros((MR, k), np.float32)
    a[:nrows] = rng.standard_normal((nrows, k))
    b = rng.standard_normal((k, NR)).astype(np.float32)
    bias = rng.standard_normal(NR).astype(np.float32)
    want = np.empty((MR, NR), np.float32)
    _full(a, b, want, bias)
    got = np.full((MR, NR), 7.0, np.float32)
    _edge(NR // 16, nrows, a[:nrows].copy(), b, got, bias)  # reads only its rows
    assert np.array_equal(got[:nrows], want[:nrows])
    assert (got[nrows:] == 7.0).all()  # rows past the edge untouched


def _fused_linear(m: int, k: int, n: int, act: str, order: str,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    x = rng.standard_normal((m, k)).astype(np.float32)
    res = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    extra = {"activation_min": -0.5, "activation_max": 1.0} if act == "clamp" else {}
    b = GraphBuilder()
    xv = b.input("x", TensorType(x.shape, DType.f32))
    rv = b.input("r", TensorType(res.shape, DType.f32))
    attrs = dict(activation=act, has_residual=True, order=order, **extra)
    y = b.op("fused_linear", [xv, b.constant("w", w), b.constant("b", bias), rv], attrs)
    return both(b.build([y]), [x, res])


@pytest.mark.parametrize("m", [1, 5, 2 * MR + 1, 21 * MR + 2, 3 * MR + 4])
@pytest.mark.parametrize("n", [2 * NR, NR + 6, NR + 8])
@pytest.mark.parametrize(
    "act,order",
    [("relu", "residual_then_activation"), ("gelu", "activation_then_residual"),
     ("clamp", "residual_then_activation"), ("none", "residual_then_activation")],
)  # fmt: skip
def test_fused_linear_with_row_edges(m: int, n: int, act: str, order: str,
                                     rng: np.random.Generator) -> None:  # fmt: skip
    k = 300
    got, want = _fused_linear(m, k, n, act, order, rng)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= reduction_bound(k, want)


@pytest.mark.parametrize("m", [MR + 1, 21 * MR + 2])
def test_batched_matmul_with_row_edges(m: int, rng: np.random.Generator) -> None:
    k, n = 64, NR + 16
    a = rng.standard_normal((3, m, k)).astype(np.float32)
    bm = rng.standard_normal((3, k, n)).astype(np.float32)
    b = GraphBuilder()
    av = b.input("a", TensorType(a.shape, DType.f32))
    bv = b.input("b", TensorType(bm.shape, DType.f32))
    y = b.op("matmul", [av, bv], {})
    got, want = both(b.build([y]), [a, bm])
    assert np.abs(got - want).max() <= reduction_bound(k, want)
