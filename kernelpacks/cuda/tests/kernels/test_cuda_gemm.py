"""Tiled GEMM: odd sizes that do not divide the tile, batch broadcasting, epilogues, fp16."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import common, gemm
from cuvil_kernels_cuda.kernels.epilogue import Epilogue


def test_odd_sizes_and_broadcast_batch(rng: np.random.Generator) -> None:
    tile = common.gemm_tile()
    m, k, n = tile + 1, 2 * tile - 3, tile + 3  # none divides the tile
    a = rng.standard_normal((2, 1, m, k)).astype(np.float32)
    b = rng.standard_normal((1, 2, k, n)).astype(np.float32)
    got = host(gemm.matmul(a, b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_transposed_operand_view(rng: np.random.Generator) -> None:
    a = rng.standard_normal((5, 3)).astype(np.float32).T  # (3, 5) view
    b = rng.standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(host(gemm.matmul(a, b)), a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("act", "torch_act"),
    [("relu", F.relu), ("relu6", F.relu6), ("gelu", F.gelu), ("silu", F.silu),
     ("hardswish", F.hardswish)],
)  # fmt: skip
def test_linear_epilogue(act: str, torch_act: object, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 7)).astype(np.float32)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    r = rng.standard_normal((2, 3, 5)).astype(np.float32)
    got = host(gemm.linear(x, w, b, residual=r, epilogue=Epilogue(act)))
    lin = F.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    want = torch_act(lin).numpy() + r  # type: ignore[operator]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_residual_before_activation(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((3, 6)).astype(np.float32)
    r = rng.standard_normal((4, 3)).astype(np.float32)
    got = host(
        gemm.linear(x, w, residual=r, epilogue=Epilogue("relu", residual_before_activation=True))
    )
    np.testing.assert_allclose(got, np.maximum(x @ w.T + r, 0), rtol=1e-5, atol=1e-5)


def test_fp16_storage_fp32_accumulate(rng: np.random.Generator) -> None:
    a = rng.standard_normal((5, 11)).astype(np.float16)
    b = rng.standard_normal((11, 6)).astype(np.float16)
    got = gemm.matmul(a, b)
    assert got.dtype == np.float16
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # fp32 accumulation is ~exact here; the bound is one fp16 rounding of the result.
    np.testing.assert_allclose(host(got).astype(np.float64), exact, rtol=2**-11, atol=1e-3)


def test_shape_errors_name_the_op() -> None:
    with pytest.raises(ValueError, match="matmul"):
        gemm.matmul(np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match="bias"):
        gemm.linear(np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32), np.zeros(3))
    with pytest.raises(KeyError, match="fusable"):
        Epilogue("tanh")


@pytest.mark.slow
@pytest.mark.parametrize("m", [1, gemm.GEMV_MAX_ROWS, gemm.GEMV_MAX_ROWS + 1])
def test_skinny_rows_take_the_gemv_path_and_agree(m: int, rng: np.random.Generator) -> None:
    # m <= GEMV_MAX_ROWS uses the one-thread-per-column kernel, m + 1 the tiled one: both equal
    # numpy within f32 reduction error, with a batch broadcast and a bias + relu epilogue.
    a = rng.standard_normal((2, 1, m, 37)).astype(np.float32)
    b = rng.standard_normal((1, 3, 37, 19)).astype(np.float32)
    bias = rng.standard_normal(19).astype(np.float32)
    got = host(gemm.matmul(a, b, bias=bias, epilogue=Epilogue("relu")))
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("unroll", [2, 4, 5])
def test_loop_unroll_factor_builds_another_kernel_with_equal_bits(
    unroll: int, rng: np.random.Generator
) -> None:
    # K = 37 is not a multiple of any factor: the remainder loop is exercised too.
    a = rng.standard_normal((1, 37)).astype(np.float32)
    b = rng.standard_normal((37, 11)).astype(np.float32)
    with common.recording(0, 1) as log1:
        base = host(gemm.matmul(a, b))
    with common.recording(0, unroll) as log2:
        got = host(gemm.matmul(a, b))
    assert log1[-1].kernel is not log2[-1].kernel  # a different compiled kernel
    np.testing.assert_array_equal(got, base)  # same summation order, same bits
