"""loop_unroll_factor really changes the generated code of every family."""

from __future__ import annotations

import re

from cuvil_kernels_hip.kernels.conv2d import conv2d_source
from cuvil_kernels_hip.kernels.elementwise import elementwise_source
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.kernels.normalization import normalization_source
from cuvil_kernels_hip.kernels.pooling import pooling_source
from cuvil_kernels_hip.kernels.qgemm import qconv2d_source, qgemm_source
from cuvil_kernels_hip.kernels.qpool import qpool_source
from cuvil_kernels_hip.kernels.quant_elementwise import quant_elementwise_source
from cuvil_kernels_hip.kernels.reduction import reduction_source
from cuvil_kernels_hip.source import KernelOptions


def _copies(code: str, pattern: str) -> int:
    return len(re.findall(pattern, code))


def test_tiled_gemm_family_has_pragma_and_n_manual_k_steps(unroll_options: KernelOptions) -> None:
    n = unroll_options.loop_unroll_factor
    for src in (
        gemm_source("float32", unroll_options),
        conv2d_source("float16", unroll_options),
        qgemm_source(unroll_options),
        qconv2d_source(unroll_options),
    ):
        assert f"#pragma unroll {n}\n    for (int kk = 0;" in src.code, src.family
        assert f"kk += {n})" in src.code
        assert _copies(src.code, r"acc\[i\]\[j\] \+= As") == n, src.family
        assert all(f"[kk + {u}]" in src.code for u in range(n))


def test_wmma_gemm_unrolls_n_fragments_per_k_step(unroll_options: KernelOptions) -> None:
    n = unroll_options.loop_unroll_factor
    code = gemm_source("float16", unroll_options, variant="wmma").code
    assert _copies(code, r"load_matrix_sync\(fa,") == n
    assert f"k0 += {16 * n})" in code


def test_one_dimensional_families_unroll_n_elements_per_iteration(
    unroll_options: KernelOptions,
) -> None:
    n = unroll_options.loop_unroll_factor
    ew = elementwise_source((("relu", None),), 1, "float32", unroll_options).code
    assert _copies(ew, r"long long i = base \+ \d+ \* stride") == n
    assert f"base += stride * {n}" in ew
    q = quant_elementwise_source("quantize", unroll_options).code
    assert _copies(q, r"long long i = base \+ \d+ \* stride") == n
    red = reduction_source("sum", "float16", unroll_options).code
    assert _copies(red, r"long long j = j0 \+ \d+ \* \(long long\)blockDim.x") == n
    norm = normalization_source("softmax", "float32", unroll_options).code
    # three passes over the row (max, sum, write), each unrolled n times
    assert _copies(norm, r"long long c = c0 \+ \d+ \* \(long long\)blockDim.x") == 3 * n


def test_pooling_kw_loop_carries_the_pragma(unroll_options: KernelOptions) -> None:
    n = unroll_options.loop_unroll_factor
    for src in (
        pooling_source("max", "float32", unroll_options),
        qpool_source("avg", unroll_options),
    ):
        assert f"#pragma unroll {n}\n      for (int iw = w0;" in src.code


def test_unroll_changes_the_source_text() -> None:
    codes = {gemm_source("float32", KernelOptions(u)).code for u in (1, 2, 4, 8, 16)}
    assert len(codes) == 5
