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



@functools.lru_cache(maxsize=1)
def host_features() -> frozenset[str]:
    """The host CPU's LLVM feature names that are enabled (``avx512f``, ``avx512vnni``...)."""
    flat = llvm.get_host_cpu_features().flatten()
    return frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))


def host_cpu() -> str:
    return str(llvm.get_host_cpu_name())


_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


@functools.lru_cache(maxsize=1)
def l1d_bytes(cache_dir: str = _CACHE_DIR) -> int:
    """One core's L1 data cache in bytes, from Linux's cache description (``index*/level``,
    ``type``, ``size`` such as ``48K``); 32 KiB where the OS does not say."""
    try:
        for entry in sorted(os.listdir(cache_dir)):
            path = os.path.join(cache_dir, entry)
            if not entry.startswith("index"):
                continue
            with open(os.path.join(path, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            if level == "1" and kind in ("Data", "Unified"):
                with open(os.path.join(path, "size")) as f:
                    size = f.read().strip().upper()
                scale = {"K": 1024, "M": 1024 * 1024}.get(size[-1:], 1)
                return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return 32 * 1024


HAS_AVX512 = "avx512f" in host_features()
HAS_VNNI = HAS_AVX512 and "avx512vnni" in host_features()
HAS_AVX2 = "avx2" in host_features()

#: float32 tile: MR rows x (NV * 16) columns of accumulators.
MR = 6
NV = 4 if HAS_AVX512 else 1
NR = NV * 16
#: Bytes ahead of its B panel reads at which the float32 tile asks for a line (``prefetcht0``,
#: one per 64 bytes it reads) on an item's first pass over a panel (``microkernel.B_AHEAD``:
#: the GEMM's first row tile, the Winograd GEMMs' first): a weight panel read once per
#: inference then arrives from memory while the tile computes instead of at the pace of the
#: hardware prefetcher. Measured on the AMD EPYC (Zen 2, 6 x 16 tile, 2 threads, 2026-12-07,
#: Cuvil / ONNX Runtime interleaved, one process per variant, two of each): ResNet-50 b1
#: 1.062, 1.066 -> 1.048, 1.031; BERT-base 1.035 -> 1.016; ResNet-18 b8 0.702 -> 0.703. With
#: the prefetch on every pass, 2048 and 8192 bytes ahead were no better than 4096, and a full
#: benchmark run gave BERT-base 1.039 and ResNet-18/50 b8 0.765/1.008 against 1.018 and
#: 0.734/0.987 without any prefetch. Not measured with AVX-512 (256 bytes a k step there, so
#: the same distance is another lead in time): off there.
B_PREFETCH = 0 if HAS_AVX512 else 4096
#: Whether the GEMM takes K in L1-sized chunks where a panel outgrows L1 (``gemm.k_block``).
#: Measured with the AVX-512 tile on the Intel host: BERT-base's linear layers 11-18 % faster
#: on two threads. With the 6 x 16 AVX2 tile on the AMD EPYC (Zen 2, 2026-12-07, the chunked
#: layers of a model switched in one process, alternating): ResNet-50 b1's 13 such layers
#: 15.23 -> 14.57 and 15.20 -> 14.67 ms without chunks, BERT-base's 141.0/140.1 against
#: 139.4/141.0 ms (even), so there the whole K runs in one pass.
K_CHUNKS = HAS_AVX512
#: Channel vectors (16 lanes) of the depthwise kernel's six-pixel tile. Six pixels x four vectors
#: are 24 zmm registers with AVX-512, 48 ymm without: spilled. Measured with AVX2 on the AMD
#: EPYC (Zen 2, 2026-12-07, one thread, MobileNetV2's layers, hot): 56x56x144 0.305 ms with
#: four vectors, 0.248 with two, 0.209 with one; 112x112x96 stride 2 0.289 / 0.279 / 0.253.
#: One-pixel tiles (borders, short rows: 7x7x960 was 0.030 ms with four, 0.047 with one) keep
#: four vectors (8 ymm).
DW_NV = 4 if HAS_AVX512 else 1
#: int8 tile (u8 x s8 -> i32): same register shape.
MR_I8 = 6
NV_I8 = 4 if HAS_AVX512 else 1
NR_I8 = NV_I8 * 16
#: Without VNNI but with AVX2 the int8 tile multiplies int16 pairs (``vpmaddwd``: exact, where
#: ``vpmaddubsw`` saturates int16) and the weights are packed as int16.
INT8_PAIRS = HAS_AVX2 and not HAS_VNNI
#: weights per column and step of the int8 tile: 4 bytes, or 2 int16 with INT8_PAIRS
K_STEP_I8 = 2 if INT8_PAIRS else 4


def describe() -> str:
    """One line for reports: CPU, vector ISA and tile shapes."""
    isa = "AVX-512" if HAS_AVX512 else "AVX2/portable"
    int8 = "VNNI vpdpbusd" if HAS_VNNI else "AVX2 vpmaddwd" if HAS_AVX2 else "widening multiply-add"
    return f"{host_cpu()} ({isa}; f32 tile {MR}x{NR}, int8 tile {MR_I8}x{NR_I8} via {int8})"


def kernel(fn: F) -> F:
    """``numba.njit(nogil=True, cache=True)``: the pack's kernel decorator.

    ``nogil``: a kernel never holds the GIL, so other Python threads (a server's request
    handlers, a second inference, the pack's own helper threads) run while it computes.
    Parallelism is not Numba's ``prange``: every thread of a :class:`cuvil_kernels_cpu.team.Team`
    calls the kernel and takes items from a shared counter (:mod:`.atomics`), so a thread the OS
    has not scheduled (a loaded machine) delays nobody -- with an OpenMP team each region waits
    for every thread, which was measured here at 20-100x slowdowns under load.

    No ``fastmath``: NaN and infinity semantics must match the interpreter. ``error_model=
    "numpy"``: a float division by zero gives inf/NaN (IEEE) instead of raising, which also
    lets LLVM vectorize loops that divide.
    """
    import numba

    return numba.njit(nogil=True, cache=True, error_model="numpy")(fn)  # type: ignore[no-any-return]


def serial_kernel(fn: F) -> F:
    """Like :func:`kernel`, for small helpers called from other kernels."""
    import numba

    return numba.njit(nogil=True, cache=True, error_model="numpy")(fn)  # type: ignore[no-any-return]


def reduction_kernel(fn: F) -> F:
    """A kernel whose float sums may be reassociated (vectorized): allowed inside the
    conformance bound for reductions; NaN/infinity handling is untouched (no nnan/ninf)."""
    import numba

    return numba.njit(  # type: ignore[no-any-return]
        nogil=True,
        cache=True,
        error_model="numpy",
        fastmath={"reassoc", "contract"},
    )(fn)
