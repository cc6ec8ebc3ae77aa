"""The CUDA tensor-core (``nvcuda::wmma``) GEMM loop, with the SIMT loop as its HIP twin.

Same launch as the SIMT core with ``micro=4``: a 16x16-thread block (8 warps) owns a 64x64 output
tile; warp ``w`` computes rows ``16*(w % 4)`` and two 16-column fragments at ``32*(w / 4)``.
Fragments load straight from global memory (M, N, K are multiples of 16, so every fragment
pointer is 32-byte aligned given a 256-byte-aligned base). Each accumulator fragment is staged
through a per-warp shared buffer so the caller's ``store`` snippet sees ``(gm, gn, a)`` exactly as
in the SIMT core. The K loop is manually unrolled ``loop_unroll_factor`` fragments deep.

Callers provide ``a_ptr(kk)``: pointer to A's fragment at ``(wm, kk)`` (lda ``K``) and
``b_ptr``: B's fragment at ``(kk, wn)``; ``b_col_major`` says B is stored ``[N, K]``.
"""

from __future__ import annotations

WMMA_CTYPE = {"float16": "__half", "bfloat16": "__nv_bfloat16", "int8": "signed char"}


def wmma_gemm_kernel(
    entry: str,
    params_sig: str,
    prologue: str,
    a_base: str,
    b_base: str,
    b_col_major: bool,
    store: str,
    dtype: str,
    unroll: int,
) -> str:
    """Return the CUDA-only WMMA kernel text (without prelude, without the ``#if`` guard)."""
    frag_t = WMMA_CTYPE[dtype]
    acc_t = "int" if dtype == "int8" else "float"
    layout = "col_major" if b_col_major else "row_major"
    b_ptr = (
        f"{b_base} + (long long)wn * K + kk"
        if b_col_major
        else f"{b_base} + (long long)kk * N + wn"
    )
    b_ld = "K" if b_col_major else "N"
    steps = "\n".join(
        f"""    {{
      const int kk = k0 + {16 * u};
      if (kk < K) {{
        wmma::load_matrix_sync(fa, (const {frag_t}*)({a_base} + (long long)wm * K + kk), K);
        for (int j = 0; j < 2; ++j) {{
          const int wn = wn0 + 16 * j;
          if (wn < N) {{
            wmma::load_matrix_sync(fb, (const {frag_t}*)({b_ptr}), {b_ld});
            wmma::mma_sync(fc[j], fa, fb, fc[j]);
          }}
        }}
      }}
    }}"""
        for u in range(unroll)
    )
    return f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS(256)
{entry}({params_sig}) {{
  using namespace nvcuda;
  __shared__ {acc_t} stage[8][16 * 16];
  const int tid = threadIdx.y * 16 + threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int z = blockIdx.z;
  const int wm = blockIdx.y * 64 + (warp % 4) * 16;
  const int wn0 = blockIdx.x * 64 + (warp / 4) * 32;
{prologue}
  if (wm >= M) return;  // warp-uniform; no block-wide barrier follows
  wmma::fragment<wmma::matrix_a, 16, 16, 16, {frag_t}, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, {frag_t}, wmma::{layout}> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, {acc_t}> fc[2];
  wmma::fill_fragment(fc[0], ({acc_t})0);
  wmma::fill_fragment(fc[1], ({acc_t})0);
  // {unroll} fragments of K per iteration (loop_unroll_factor={unroll})
#pragma unroll 1
  for (int k0 = 0; k0 < K; k0 += {16 * unroll}) {{
{steps}
  }}
  for (int j = 0; j < 2; ++j) {{
    const int wn = wn0 + 16 * j;
    if (wn >= N) continue;
    wmma::store_matrix_sync(stage[warp], fc[j], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {{
      const int gm = wm + e / 16, gn = wn + e % 16;
      const {acc_t} a = stage[warp][e];
      {store}
    }}
    __syncwarp();
  }}
}}
"""


def wmma_includes(dtype: str) -> str:
    """Headers the WMMA path needs (CUDA only)."""
    return "#include <mma.h>\n" + ("#include <cuda_bf16.h>\n" if dtype == "bfloat16" else "")
