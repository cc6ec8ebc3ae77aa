"""The portable prelude every generated kernel starts with, and the storage-dtype table.

One source compiles with nvcc/NVRTC (CUDA) and hipcc/hiprtc (ROCm). The differences between the
two dialects live here, as macros selected by ``__HIPCC__``/``__HIP_PLATFORM_AMD__`` versus
``__CUDACC__``: half-precision headers, warp (wavefront) size, shuffles and launch bounds. Kernel
templates use only the ``CUVIL_*`` names, never a dialect-specific intrinsic.

No standard C headers are included because NVRTC and hiprtc do not ship them; fixed-width types
are spelled with the built-in ``int``/``long long``/``signed char``.
"""

from __future__ import annotations

from dataclasses import dataclass

PRELUDE = r"""// ---- cuvil portable prelude (CUDA / HIP) ----
#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define CUVIL_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
#include <hip/hip_fp16.h>
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define CUVIL_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define CUVIL_WARP_SIZE 64
#endif
#define CUVIL_SHFL_DOWN(v, d) __shfl_down((v), (d))
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CUVIL_CUDA 1
#include <cuda_fp16.h>
#define CUVIL_WARP_SIZE 32
#define CUVIL_SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#else
#error "cuvil kernels need a CUDA or HIP compiler"
#endif
#define CUVIL_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define CUVIL_MAX_WARPS 32
#define CUVIL_INF __int_as_float(0x7f800000)
typedef __half cuvil_half;
typedef unsigned short cuvil_bf16;  // raw bfloat16 bits: portable without cuda_bf16/hip_bf16

__device__ __forceinline__ float cuvil_bf16_to_float(cuvil_bf16 b) {
  return __int_as_float(((int)b) << 16);
}
__device__ __forceinline__ cuvil_bf16 cuvil_float_to_bf16(float f) {
  unsigned int u = (unsigned int)__float_as_int(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (cuvil_bf16)0x7fc0u;  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (cuvil_bf16)(u >> 16);
}
// NaN-propagating max/min (torch.maximum/relu semantics; fmaxf/fminf would drop a NaN).
__device__ __forceinline__ float cuvil_max_nan(float a, float b) {
  return (a > b || a != a) ? a : b;
}
__device__ __forceinline__ float cuvil_min_nan(float a, float b) {
  return (a < b || a != a) ? a : b;
}
// Sum/max of one warp (wavefront); lane 0 holds the result.
__device__ __forceinline__ float cuvil_warp_sum(float v) {
  for (int d = CUVIL_WARP_SIZE / 2; d > 0; d >>= 1) v += CUVIL_SHFL_DOWN(v, d);
  return v;
}
__device__ __forceinline__ float cuvil_warp_max(float v) {
  for (int d = CUVIL_WARP_SIZE / 2; d > 0; d >>= 1) v = fmaxf(v, CUVIL_SHFL_DOWN(v, d));
  return v;
}
// Block-wide reduction through one shared slot per warp; every thread gets the result.
__device__ __forceinline__ float cuvil_block_reduce(float v, bool is_max, float* scratch) {
  const int lane = threadIdx.x % CUVIL_WARP_SIZE;
  const int warp = threadIdx.x / CUVIL_WARP_SIZE;
  const int nwarps = (blockDim.x + CUVIL_WARP_SIZE - 1) / CUVIL_WARP_SIZE;
  v = is_max ? cuvil_warp_max(v) : cuvil_warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = is_max ? -CUVIL_INF : 0.0f;
  for (int w = 0; w < nwarps; ++w) r = is_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}
// ---- end prelude ----
"""


@dataclass(frozen=True)
class StorageType:
    """How one storage dtype is spelled in C and converted to/from the fp32 compute type."""

    name: str
    ctype: str
    load: str  # format string with {x}: storage value -> float
    store: str  # format string with {v}: float -> storage value
    itemsize: int


FLOAT_TYPES: dict[str, StorageType] = {
    "float32": StorageType("float32", "float", "({x})", "({v})", 4),
    "float16": StorageType("float16", "cuvil_half", "__half2float({x})", "__float2half({v})", 2),
    "bfloat16": StorageType(
        "bfloat16", "cuvil_bf16", "cuvil_bf16_to_float({x})", "cuvil_float_to_bf16({v})", 2
    ),
}


def storage_type(dtype: str, family: str) -> StorageType:
    """Return the float storage type ``dtype``; raise naming ``family`` and the accepted dtypes."""
    try:
        return FLOAT_TYPES[dtype]
    except KeyError:
        raise ValueError(
            f"kernel family {family!r}: dtype {dtype!r} is not a float storage type; "
            f"use one of {sorted(FLOAT_TYPES)}"
        ) from None


def float_literal(value: float) -> str:
    """A C float literal that round-trips ``value`` through float32 (inf/nan spelled portably)."""
    if value != value:
        return "__int_as_float(0x7fc00000)"
    if value in (float("inf"), float("-inf")):
        return "CUVIL_INF" if value > 0 else "(-CUVIL_INF)"
    return f"{float(value)!r}f"
