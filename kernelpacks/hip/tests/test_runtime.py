"""The runtime imports without CuPy or a GPU, reports why, and caches binaries on disk."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from cuvil_kernels_hip import runtime
from cuvil_kernels_hip.kernels.reduction import reduction_source
from cuvil_kernels_hip.runtime import BufferSpec, check_buffers
from cuvil_kernels_hip.source import KernelOptions

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_availability_says_cupy_is_missing() -> None:
    ok, reason = runtime.availability()
    assert ok is False
    assert "CuPy is not installed" in reason


def test_cache_path_is_keyed_by_hash_and_arch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("CUVIL_CACHE_DIR", str(tmp_path))
    src = reduction_source("sum", "float32", KernelOptions())
    assert runtime.cache_path(src, "sm_90") == tmp_path / "hip" / "sm_90" / f"{src.sha256}.cubin"
    assert runtime.cache_path(src, "gfx90a").suffix == ".hsaco"
    monkeypatch.delenv("CUVIL_CACHE_DIR")
    assert runtime.cache_dir() == Path.home() / ".cache" / "cuvil" / "hip"


def test_cached_binary_builds_once_then_reuses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    monkeypatch.setenv("CUVIL_CACHE_DIR", str(tmp_path))
    src = reduction_source("max", "float16", KernelOptions(2))
    path = runtime.cached_binary(src, "sm_80")
    assert path is not None and path.stat().st_size > 0

    def fail(*_: object, **__: object) -> None:
        raise AssertionError("a cached binary must not be recompiled")

    monkeypatch.setattr(runtime, "compile_source", fail)
    assert runtime.cached_binary(src, "sm_80") == path


def test_buffers_must_be_aligned_and_inside_the_arena() -> None:
    specs = {"x": BufferSpec(0, (4, 8), "float32"), "w": BufferSpec(256, (16,), "bfloat16")}
    assert specs["w"].nbytes == 32 and specs["w"].array_dtype == "uint16"
    check_buffers(specs, 512)
    with pytest.raises(ValueError, match="'y': offset 100 is not a multiple of 64"):
        check_buffers({"y": BufferSpec(100, (1,), "int8")}, 512)
    with pytest.raises(ValueError, match="'x': bytes \\[0, 128\\) exceed the arena of 64"):
        check_buffers(specs, 64)
