"""Reductions over one axis: sum, mean, max (warp shuffle + shared memory).

The input is viewed as ``(outer, r, inner)`` and reduced over ``r`` into ``(outer, inner)``; any
single-axis reduction of a contiguous tensor has that view. One block per output element
(grid-stride over outputs); the block's threads stride over ``r``, ``loop_unroll_factor``
elements per iteration, then combine with ``cuvil_block_reduce``. Accumulation is fp32.
"""

from __future__ import annotations

from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

REDUCE_OPS = ("sum", "mean", "max")


def reduction_source(op: str, dtype: str, options: KernelOptions) -> KernelSource:
    """Generate the kernel reducing ``(outer, r, inner) -> (outer, inner)`` with ``op``."""
    family = "reduction"
    st = storage_type(dtype, family)
    if op not in REDUCE_OPS:
        raise ValueError(f"reduction op {op!r} is unknown; use one of {REDUCE_OPS}")
    params: dict[str, object] = {"op": op}
    entry = entry_name(family, dtype, params, options)
    is_max = "true" if op == "max" else "false"
    init = "-CUVIL_INF" if op == "max" else "0.0f"
    combine = "acc = fmaxf(acc, t);" if op == "max" else "acc += t;"
    u_count = options.loop_unroll_factor
    steps = "\n".join(
        f"      {{ long long j = j0 + {u} * (long long)blockDim.x; if (j < r) {{ "
        f"float t = {st.load.format(x='x[base + j * inner]')}; {combine} }} }}"
        for u in range(u_count)
    )
    finish = "acc / (float)r" if op == "mean" else "acc"
    body = f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}(const {st.ctype}* __restrict__ x, {st.ctype}* __restrict__ y,
        long long outer, long long r, long long inner) {{
  __shared__ float scratch[CUVIL_MAX_WARPS];
  for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {{
    const long long base = (o / inner) * r * inner + (o % inner);
    float acc = {init};
#pragma unroll 1
    for (long long j0 = threadIdx.x; j0 < r; j0 += (long long)blockDim.x * {u_count}) {{
{steps}
    }}
    acc = cuvil_block_reduce(acc, {is_max}, scratch);
    if (threadIdx.x == 0) y[o] = {st.store.format(v=finish)};
  }}
}}
"""
    return assemble(
        family,
        dtype,
        params,
        options,
        body,
        entry,
        launch="grid=min(outer*inner, 65535), block=block_size; args=(x, y, outer, r, inner)",
    )
