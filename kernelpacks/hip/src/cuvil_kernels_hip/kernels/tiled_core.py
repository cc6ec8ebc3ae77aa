"""The shared-memory tiled GEMM loop every SIMT GEMM-like kernel is built from.

``C[m, n] = sum_k A(m, k) * B(k, n)`` per ``blockIdx.z`` slice (batch or conv group). A block of
16x16 threads owns a ``(16*micro) x (16*micro)`` output tile; each thread keeps ``micro x micro``
accumulators. K advances in tiles of 16 staged through shared memory; the inner K loop is
manually unrolled ``loop_unroll_factor`` times under ``#pragma unroll``. Out-of-range elements
load as zero, so odd M, N, K need no special casing.

Callers supply C snippets: ``load_a`` assigns ``val`` from ``(gm, gk)``, ``load_b`` assigns
``val`` from ``(gk, gn)`` (both run only in range), and ``store`` consumes ``acc`` at
``(gm, gn)`` (runs only in range). ``acc_type`` is ``float`` (float kernels) or ``int``
(int8 kernels, exact int32 accumulation).
"""

from __future__ import annotations

BK = 16
THREADS_XY = 16


def tiled_gemm_kernel(
    entry: str,
    params_sig: str,
    prologue: str,
    load_a: str,
    load_b: str,
    store: str,
    acc_type: str,
    micro: int,
    unroll: int,
) -> str:
    """Return the ``extern "C"`` kernel text (without prelude) for one tiled GEMM variant."""
    if micro not in (1, 2, 4):
        raise ValueError(f"tiled GEMM micro tile {micro} is not supported; use 1, 2 or 4")
    if BK % unroll != 0:
        raise ValueError(f"loop_unroll_factor {unroll} must divide the K tile {BK}")
    bm = THREADS_XY * micro
    zero = "0.0f" if acc_type == "float" else "0"
    k_step = unroll
    fma = "\n".join(
        f"      for (int i = 0; i < {micro}; ++i) for (int j = 0; j < {micro}; ++j) "
        f"acc[i][j] += As[ty + {THREADS_XY} * i][kk + {u}] * Bs[kk + {u}][tx + {THREADS_XY} * j];"
        for u in range(k_step)
    )
    return f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({THREADS_XY * THREADS_XY})
{entry}({params_sig}) {{
  __shared__ {acc_type} As[{bm}][{BK} + 1];
  __shared__ {acc_type} Bs[{BK}][{bm} + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * {THREADS_XY} + tx;
  const int z = blockIdx.z;
  const int m0 = blockIdx.y * {bm}, n0 = blockIdx.x * {bm};
{prologue}
  {acc_type} acc[{micro}][{micro}];
#pragma unroll
  for (int i = 0; i < {micro}; ++i)
#pragma unroll
    for (int j = 0; j < {micro}; ++j) acc[i][j] = {zero};
  for (int k0 = 0; k0 < K; k0 += {BK}) {{
    for (int e = tid; e < {bm * BK}; e += {THREADS_XY * THREADS_XY}) {{
      const int gm = m0 + e / {BK}, gk = k0 + e % {BK};
      {acc_type} val = {zero};
      if (gm < M && gk < K) {{ {load_a} }}
      As[e / {BK}][e % {BK}] = val;
    }}
    for (int e = tid; e < {BK * bm}; e += {THREADS_XY * THREADS_XY}) {{
      const int gk = k0 + e / {bm}, gn = n0 + e % {bm};
      {acc_type} val = {zero};
      if (gk < K && gn < N) {{ {load_b} }}
      Bs[e / {bm}][e % {bm}] = val;
    }}
    __syncthreads();
    // K tile: {k_step}-way manual unroll (loop_unroll_factor={unroll})
#pragma unroll {unroll}
    for (int kk = 0; kk < {BK}; kk += {k_step}) {{
{fma}
    }}
    __syncthreads();
  }}
#pragma unroll
  for (int i = 0; i < {micro}; ++i)
#pragma unroll
    for (int j = 0; j < {micro}; ++j) {{
      const int gm = m0 + ty + {THREADS_XY} * i, gn = n0 + tx + {THREADS_XY} * j;
      if (gm < M && gn < N) {{ const {acc_type} a = acc[i][j]; {store} }}
    }}
}}
"""


def tiled_launch(bm_micro: int, m: str, n: str, z: str) -> str:
    """How to launch a tiled GEMM kernel, in words."""
    tile = THREADS_XY * bm_micro
    return f"grid=(ceil({n}/{tile}), ceil({m}/{tile}), {z}), block=(16, 16)"
