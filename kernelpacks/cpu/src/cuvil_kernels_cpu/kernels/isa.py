"""What the host CPU offers, and the one decorator every kernel of the pack is compiled with.

The micro-kernels are written for 16-lane vectors. With AVX-512 a tile of ``MR x NR`` float32
accumulators is ``MR * NR / 16`` zmm registers; on a CPU without AVX-512 LLVM splits each 16-lane
vector into two AVX2 registers, so the tile is made narrower (fewer vectors per row) to stay in
the 16 registers there. The int8 tile uses ``vpdpbusd`` (AVX-512 VNNI) when present and a
portable widening multiply-add otherwise: both are exact int32 arithmetic.

Numba's on-disk cache is keyed on the CPU name and features, so a cache made on one machine is
never loaded on a different CPU.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import llvmlite.binding as llvm

F = TypeVar("F", bound=Callable[..., Any])

# Numba's OpenMP threading layer (GNU libgomp) spins its idle workers for ~300k iterations
# between parallel regions by default. A kernel pack runs dozens of short regions per
# inference, often on a machine shared with other work: spinning workers then steal the very
# cores the busy ones need (measured here: ResNet-18 at 64x64 on 2 loaded cores, 111 ms with
# the default, 5.7 ms with a short spin). A short spin keeps most of the wake-up latency win.
# Set before the threading layer loads; a value the user set is kept.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")


@functools.lru_cache(maxsize=1)
def host_features() -> frozenset[str]:
    """The host CPU's LLVM feature names that are enabled (``avx512f``, ``avx512vnni``...)."""
    flat = llvm.get_host_cpu_features().flatten()
    return frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))


def host_cpu() -> str:
    return str(llvm.get_host_cpu_name())


HAS_AVX512 = "avx512f" in host_features()
HAS_VNNI = HAS_AVX512 and "avx512vnni" in host_features()

#: float32 tile: MR rows x (NV * 16) columns of accumulators.
MR = 6
NV = 4 if HAS_AVX512 else 1
NR = NV * 16
#: int8 tile (u8 x s8 -> i32): same register shape.
MR_I8 = 6
NV_I8 = 4 if HAS_AVX512 else 1
NR_I8 = NV_I8 * 16


def describe() -> str:
    """One line for reports: CPU, vector ISA and tile shapes."""
    isa = "AVX-512" if HAS_AVX512 else "AVX2/portable"
    int8 = "VNNI vpdpbusd" if HAS_VNNI else "widening multiply-add"
    return f"{host_cpu()} ({isa}; f32 tile {MR}x{NR}, int8 tile {MR_I8}x{NR_I8} via {int8})"


def kernel(fn: F) -> F:
    """``numba.njit(nogil=True, parallel=True, cache=True)``: the pack's kernel decorator.

    ``nogil``: a kernel never holds the GIL, so other Python threads (a server's request
    handlers, a second inference) run while it computes. ``parallel``: ``prange`` loops run on
    Numba's threading layer, sized per call by ``numba.set_num_threads`` in the calling thread.
    No ``fastmath``: NaN and infinity semantics must match the interpreter. ``error_model=
    "numpy"``: a float division by zero gives inf/NaN (IEEE) instead of raising, which also
    lets LLVM vectorize loops that divide.
    """
    import numba

    return numba.njit(nogil=True, parallel=True, cache=True, error_model="numpy")(  # type: ignore[no-any-return]
        fn
    )


def serial_kernel(fn: F) -> F:
    """Like :func:`kernel` without ``parallel`` (small helpers called from other kernels)."""
    import numba

    return numba.njit(nogil=True, cache=True, error_model="numpy")(fn)  # type: ignore[no-any-return]


def reduction_kernel(fn: F) -> F:
    """A kernel whose float sums may be reassociated (vectorized): allowed inside the
    conformance bound for reductions; NaN/infinity handling is untouched (no nnan/ninf)."""
    import numba

    return numba.njit(  # type: ignore[no-any-return]
        nogil=True,
        parallel=True,
        cache=True,
        error_model="numpy",
        fastmath={"reassoc", "contract"},
    )(fn)
