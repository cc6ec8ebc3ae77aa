"""Batched float GEMM ``C[b] = A[b] @ B[b]`` (or ``@ B[b].T``) with a fused epilogue.

Storage fp32/fp16/bf16, accumulation fp32. A is ``[batch, M, K]`` row-major with batch stride
``sa``; B is ``[batch, K, N]`` (or ``[batch, N, K]`` with ``trans_b``, the ``linear`` weight
layout) with batch stride ``sb`` (0 broadcasts one matrix over the batch); C is
``[batch, M, N]`` contiguous. The bias is per column ``n``; the residual has C's shape.

Kernel args: ``(A, B, [bias], [residual], C, M, N, K, sa, sb)``.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.epilogue import NO_EPILOGUE, Epilogue, float_epilogue
from cuvil_kernels_hip.kernels.tiled_core import tiled_gemm_kernel, tiled_launch
from cuvil_kernels_hip.kernels.wmma_core import wmma_gemm_kernel, wmma_includes
from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

VARIANTS = ("simt", "wmma")


def gemm_source(
    dtype: str,
    options: KernelOptions,
    epilogue: Epilogue = NO_EPILOGUE,
    trans_b: bool = False,
    variant: str = "simt",
    micro: int = 4,
) -> KernelSource:
    """Generate the batched GEMM; ``variant`` comes from ``choose_gemm_variant``.

    The ``wmma`` variant compiles the tensor-core loop on CUDA and the SIMT loop (``micro=4``,
    same launch) on HIP, so one source serves both platforms.
    """
    family = "gemm"
    st = storage_type(dtype, family)
    if variant not in VARIANTS:
        raise ValueError(f"gemm variant {variant!r} is unknown; use one of {VARIANTS}")
    if variant == "wmma" and dtype == "float32":
        raise ValueError("gemm: the wmma variant needs float16 or bfloat16 storage, not float32")
    if variant == "wmma":
        micro = 4
    params: dict[str, object] = {
        **epilogue.as_params(),
        "trans_b": trans_b,
        "variant": variant,
        "micro": micro,
    }
    entry = entry_name(family, dtype, params, options)
    t = st.ctype
    sig = f"const {t}* __restrict__ A, const {t}* __restrict__ B, "
    sig += f"const {t}* __restrict__ bias, " if epilogue.bias else ""
    sig += f"const {t}* __restrict__ residual, " if epilogue.residual else ""
    sig += f"{t}* __restrict__ C, int M, int N, int K, long long sa, long long sb"
    prologue = f"  const {t}* Az = A + (long long)z * sa;\n  const {t}* Bz = B + (long long)z * sb;"
    load_a = f"val = {st.load.format(x='Az[(long long)gm * K + gk]')};"
    b_index = "(long long)gn * K + gk" if trans_b else "(long long)gk * N + gn"
    load_b = f"val = {st.load.format(x=f'Bz[{b_index}]')};"
    out_index = "((long long)z * M + gm) * N + gn"
    store = (
        f"{float_epilogue(epilogue, '(float)a', 'gn', out_index, st.load)} "
        f"C[{out_index}] = {st.store.format(v='v')};"
    )
    simt = tiled_gemm_kernel(
        entry, sig, prologue, load_a, load_b, store, "float", micro, options.loop_unroll_factor
    )
    if variant == "simt":
        body = simt
    else:
        wmma = wmma_gemm_kernel(
            entry, sig, prologue, "Az", "Bz", trans_b, store, dtype, options.loop_unroll_factor
        )
        body = f"\n#if defined(CUVIL_CUDA)\n{wmma_includes(dtype)}{wmma}#else{simt}#endif\n"
    return assemble(
        family,
        dtype,
        params,
        options,
        body,
        entry,
        launch=tiled_launch(micro, "M", "N", "batch") + "; args=(A, B, [bias], [residual], C, "
        "M, N, K, sa, sb)",
    )
