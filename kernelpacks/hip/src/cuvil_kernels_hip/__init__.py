"""cuvil-kernels-hip: CuPy RawModule kernels in portable HIP/CUDA C for the ``hip`` target.

Kernel sources are generated from per-family templates (``cuvil_kernels_hip.kernels``) over a
portable prelude (``prelude``), registered with representative configs (``registry``) and run
through a lazy CuPy device layer (``runtime``). Importing this package needs neither CuPy nor a GPU.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.gemm_variant import GemmVariant, choose_gemm_variant
from cuvil_kernels_hip.registry import FAMILIES, KernelConfig, representative_configs
from cuvil_kernels_hip.source import KernelOptions, KernelSource

__all__ = [
    "FAMILIES",
    "GemmVariant",
    "KernelConfig",
    "KernelOptions",
    "KernelSource",
    "choose_gemm_variant",
    "representative_configs",
]
