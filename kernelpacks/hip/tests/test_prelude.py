"""The portable prelude covers the CUDA/HIP differences and every source starts with it."""

from __future__ import annotations

import pytest
from cuvil_kernels_hip.prelude import PRELUDE, float_literal, storage_type
from cuvil_kernels_hip.registry import representative_configs


def _branch(platform: str) -> str:
    """The prelude text of the HIP (first) or CUDA (second) preprocessor branch."""
    hip, rest = PRELUDE.split("#elif defined(__CUDACC__)", 1)
    return hip if platform == "hip" else rest.split("#else", 1)[0]


def test_hip_branch_selects_hip_headers_wavefront_and_shuffle() -> None:
    hip = _branch("hip")
    assert "#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)" in hip
    assert "#include <hip/hip_fp16.h>" in hip
    assert "#define CUVIL_WARP_SIZE 64" in hip
    assert "__shfl_down((v), (d))" in hip
    assert "__shfl_down_sync" not in hip


def test_cuda_branch_selects_cuda_headers_warp_and_sync_shuffle() -> None:
    cuda = _branch("cuda")
    assert "#include <cuda_fp16.h>" in cuda
    assert "#define CUVIL_WARP_SIZE 32" in cuda
    assert "__shfl_down_sync(0xffffffffu, (v), (d))" in cuda
    assert "hip_fp16" not in cuda


def test_launch_bounds_macro_and_every_source_uses_prelude_and_extern_c() -> None:
    assert "#define CUVIL_LAUNCH_BOUNDS(n) __launch_bounds__(n)" in PRELUDE
    for cfg in representative_configs():
        src = cfg.generate()
        assert PRELUDE in src.code, cfg.label
        assert 'extern "C" __global__ void CUVIL_LAUNCH_BOUNDS' in src.code, cfg.label
        assert f"\n{src.entry}(" in src.code, cfg.label
        # Kernels must not use dialect-specific shuffles directly.
        assert src.code.count("__shfl_down_sync") == PRELUDE.count("__shfl_down_sync"), cfg.label


def test_unknown_float_dtype_names_family_and_choices() -> None:
    with pytest.raises(ValueError, match=r"'gemm'.*'int4'.*float16"):
        storage_type("int4", "gemm")


def test_float_literals_round_trip_and_spell_specials() -> None:
    assert float_literal(0.5) == "0.5f"
    assert float_literal(1e-5) == "1e-05f"
    assert float_literal(float("inf")) == "CUVIL_INF"
    assert float_literal(float("-inf")) == "(-CUVIL_INF)"
    assert "0x7fc00000" in float_literal(float("nan"))
