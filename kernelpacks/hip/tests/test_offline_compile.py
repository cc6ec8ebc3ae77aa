"""A small representative subset really compiles with nvcc (sm_80) and hipcc (gfx90a).

The full matrix (all configs x sm_80, sm_90, gfx90a, gfx942) is scripts/compile_check.py.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cuvil_kernels_hip.kernels.epilogue import Epilogue
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.kernels.normalization import normalization_source
from cuvil_kernels_hip.kernels.qgemm import qconv2d_source, qgemm_source
from cuvil_kernels_hip.kernels.qpool import qpool_source
from cuvil_kernels_hip.kernels.quant_elementwise import quant_elementwise_source
from cuvil_kernels_hip.offline_compile import compile_source, compiler_for
from cuvil_kernels_hip.source import KernelOptions, KernelSource


def _subset() -> list[KernelSource]:
    o = KernelOptions(4)
    return [
        normalization_source("layer_norm", "float16", o),
        gemm_source("bfloat16", KernelOptions(2), Epilogue(True, "gelu", True), variant="wmma"),
        qgemm_source(o, variant="wmma"),
        qconv2d_source(KernelOptions(8)),
        qpool_source("avg", o),
        quant_elementwise_source("quantize", o),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "gfx90a"])
def test_subset_compiles(arch: str) -> None:
    if shutil.which(compiler_for(arch)) is None:
        pytest.skip(f"{compiler_for(arch)} is not on PATH; cannot compile for {arch}")
    sources = _subset()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s.code, arch), sources))
    for src, res in zip(sources, results):
        assert res.ok, f"{src.family} {src.entry} on {arch}:\n{res.log[:3000]}"
        assert len(res.binary) > 0


def test_compile_error_is_reported_not_raised() -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    res = compile_source('extern "C" __global__ void k() { undefined_symbol(); }', "sm_80")
    assert not res.ok and "undefined_symbol" in res.log


def test_wmma_kernel_uses_tensor_core_instructions(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    ptx = {}
    for variant in ("wmma", "simt"):
        src = tmp_path / f"{variant}.cu"
        src.write_text(gemm_source("float16", KernelOptions(2), variant=variant).code)
        out = tmp_path / f"{variant}.ptx"
        cmd = ["nvcc", "-ptx", "-arch=sm_80", "-o", str(out), str(src)]
        subprocess.run(cmd, check=True, capture_output=True)
        ptx[variant] = out.read_text()
    assert "wmma.mma.sync" in ptx["wmma"] or "mma.sync" in ptx["wmma"]
    assert "mma.sync" not in ptx["simt"]
