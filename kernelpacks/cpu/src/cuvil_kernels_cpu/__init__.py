"""Cuvil kernel pack for target ``cpu``: Numba CPU kernels that release the GIL.

Importing this package is light: it imports neither numba nor the kernels (the lowering does,
on first use). The kernels are register-tiled GEMM micro-kernels written as LLVM IR through
Numba intrinsics (AVX-512 FMA for float32, AVX-512 VNNI for int8 when the CPU has it, portable
vector IR otherwise), driven by ``numba.njit(nogil=True, parallel=True, cache=True)`` loops.
"""

from __future__ import annotations

__version__ = "0.1.0"
TARGET = "cpu"

__all__ = ["TARGET", "__version__"]
