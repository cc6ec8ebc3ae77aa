"""choose_gemm_variant picks tensor cores only when legal and explains every refusal."""

from __future__ import annotations

import pytest
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.kernels.gemm_variant import choose_gemm_variant
from cuvil_kernels_hip.kernels.qgemm import qgemm_source
from cuvil_kernels_hip.source import KernelOptions

TC = frozenset({"tensor_core", "sm_90"})


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8"])
def test_legal_dtype_and_multiple_of_16_dims_choose_wmma(dtype: str) -> None:
    v = choose_gemm_variant(dtype, 64, 128, 32, TC)
    assert v.name == "wmma" and v.tensor_core
    assert dtype in v.reason


@pytest.mark.parametrize(
    ("dtype", "m", "n", "k", "features", "reason"),
    [
        ("float32", 64, 64, 64, TC, "float32 has no tensor-core path"),
        ("float16", 64, 64, 64, {"sm_90"}, "do not list 'tensor_core'"),
        ("float16", 63, 64, 64, TC, "M=63 not a multiple of 16"),
        ("int8", 64, 10, 24, TC, "N=10, K=24 not a multiple of 16"),
        ("float16", 64, 64, 64, {"tensor_core", "gfx90a"}, "HIP target"),
        ("bfloat16", 64, 64, 64, {"tensor_core", "sm_75"}, "needs sm_80"),
    ],
)
def test_illegal_cases_choose_simt_with_reason(
    dtype: str, m: int, n: int, k: int, features: set[str], reason: str
) -> None:
    v = choose_gemm_variant(dtype, m, n, k, features)
    assert v.name == "simt" and not v.tensor_core
    assert reason in v.reason


def test_wmma_source_has_tensor_core_path_only_under_cuda_guard() -> None:
    wmma = gemm_source("float16", KernelOptions(), variant="wmma").code
    assert "using namespace nvcuda;" in wmma and "#include <mma.h>" in wmma
    guard = wmma.index("#if defined(CUVIL_CUDA)\n#include <mma.h>")
    twin = wmma.index("#else", guard)
    assert guard < wmma.index("wmma::mma_sync") < twin < wmma.rindex("acc[i][j]")
    assert "wmma::" not in wmma[twin:]  # the HIP twin is the plain tiled loop
    simt = gemm_source("float16", KernelOptions()).code
    assert "wmma::" not in simt and "mma.h" not in simt


def test_wmma_rejects_unsupported_requests() -> None:
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        gemm_source("float32", KernelOptions(), variant="wmma")
    with pytest.raises(ValueError, match="qmatmul"):
        qgemm_source(KernelOptions(), b_zero_point=True, variant="wmma")
    int8 = qgemm_source(KernelOptions(), variant="wmma").code
    assert "wmma::fragment<wmma::accumulator, 16, 16, 16, int>" in int8
    assert "- (long long)a_zp * wsum[gn]" in int8
