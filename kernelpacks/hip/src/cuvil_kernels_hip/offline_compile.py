"""Offline compilation of generated sources with nvcc (CUDA) and hipcc (ROCm).

Used by the compile check script, the compile tests and the runtime's on-disk cache (which
prefers an offline binary and falls back to CuPy's own NVRTC/hiprtc compile). Debian's hipcc
(clang 15) knows gfx90a and gfx940 but not gfx942; ``hip_arch_supported`` probes that.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CUDA_ARCHS = ("sm_80", "sm_90")
HIP_ARCHS = ("gfx90a", "gfx942")
# MI300's gfx942 shares the gfx940 ISA family; older clang only knows gfx940.
HIP_ARCH_FALLBACK = {"gfx942": "gfx940"}


@dataclass(frozen=True)
class CompileResult:
    """Outcome of compiling one source for one arch."""

    ok: bool
    compiler: str
    arch: str
    command: tuple[str, ...]
    log: str
    binary: bytes = b""


def compiler_for(arch: str) -> str:
    """``nvcc`` for ``sm_*`` archs, ``hipcc`` for ``gfx*`` archs."""
    if arch.startswith("sm_"):
        return "nvcc"
    if arch.startswith("gfx"):
        return "hipcc"
    raise ValueError(f"arch {arch!r} is neither a CUDA sm_XX nor an AMD gfxNNN target")


def compiler_available(name: str) -> bool:
    return shutil.which(name) is not None


def compile_command(arch: str, src: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    """The command line (and extra environment) that compiles ``src`` to a binary for ``arch``."""
    if compiler_for(arch) == "nvcc":
        return ["nvcc", "-cubin", f"-arch={arch}", "-O3", "-o", str(out), str(src)], {}
    cmd = ["hipcc", f"--offload-arch={arch}", "--genco", "-O3", "-x", "hip", "-o", str(out)]
    return cmd + [str(src)], {"HIP_PLATFORM": "amd"}


@functools.cache
def hip_arch_supported(arch: str) -> bool:
    """Whether this machine's hipcc accepts ``--offload-arch=arch`` (probed once)."""
    if not compiler_available("hipcc"):
        return False
    probe = 'extern "C" __global__ void cuvil_probe(float* p) { p[0] = 1.0f; }\n'
    return compile_source(probe, arch, _probe=True).ok


def resolve_hip_arch(arch: str) -> tuple[str, str]:
    """The arch actually compiled for ``arch`` and a note when a stand-in is used."""
    fallback = HIP_ARCH_FALLBACK.get(arch)
    if fallback is not None and not hip_arch_supported(arch) and hip_arch_supported(fallback):
        return (
            fallback,
            f"hipcc here does not know {arch}; compiled for {fallback} (same ISA family)",
        )
    return arch, ""


def compile_source(
    code: str, arch: str, *, timeout_s: float = 300.0, _probe: bool = False
) -> CompileResult:
    """Compile ``code`` for ``arch`` in a temporary folder; never raises on a compiler error."""
    compiler = compiler_for(arch)
    if not compiler_available(compiler):
        return CompileResult(False, compiler, arch, (), f"{compiler} is not on PATH")
    with tempfile.TemporaryDirectory(prefix="cuvil_hip_") as tmp:
        suffix = ".cu" if compiler == "nvcc" else ".hip"
        src = Path(tmp) / f"kernel{suffix}"
        out = Path(tmp) / ("kernel.cubin" if compiler == "nvcc" else "kernel.hsaco")
        src.write_text(code)
        cmd, extra_env = compile_command(arch, src, out)
        env = {**os.environ, **extra_env}
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            return CompileResult(False, compiler, arch, tuple(cmd), f"timed out after {timeout_s}s")
        log = (proc.stdout + proc.stderr).strip()
        ok = proc.returncode == 0 and out.exists()
        binary = out.read_bytes() if ok and not _probe else b""
        return CompileResult(ok, compiler, arch, tuple(cmd), log, binary)
