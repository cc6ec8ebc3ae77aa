"""Row-wise normalizations over the last axis: softmax, log_softmax, layer_norm.

The input is viewed as ``(rows, cols)``; one block per row (grid-stride over rows). Each row is
read in passes with block reductions in fp32: softmax/log_softmax take the max, then the sum of
``exp(x - max)``; layer_norm takes the mean, then the (biased) variance of ``x - mean`` (two-pass,
numerically safer than E[x^2] - E[x]^2), normalizes with ``rsqrtf(var + eps)`` and applies the
optional affine ``gamma``/``beta`` (per column).
"""

from __future__ import annotations

from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

NORM_OPS = ("softmax", "log_softmax", "layer_norm")


def _row_loop(u_count: int, stmt: str) -> str:
    """A strided loop over the row's columns, ``u_count`` columns per iteration."""
    steps = "\n".join(
        f"      {{ long long c = c0 + {u} * (long long)blockDim.x; if (c < cols) {{ {stmt} }} }}"
        for u in range(u_count)
    )
    return (
        f"    for (long long c0 = threadIdx.x; c0 < cols; c0 += (long long)blockDim.x * {u_count}) "
        f"{{\n{steps}\n    }}"
    )


def normalization_source(
    op: str, dtype: str, options: KernelOptions, affine: bool = True
) -> KernelSource:
    """Generate the row kernel for ``op``; ``affine`` only matters for layer_norm."""
    family = "normalization"
    st = storage_type(dtype, family)
    if op not in NORM_OPS:
        raise ValueError(f"normalization op {op!r} is unknown; use one of {NORM_OPS}")
    params: dict[str, object] = {"op": op, "affine": affine and op == "layer_norm"}
    entry = entry_name(family, dtype, params, options)
    u_count = options.loop_unroll_factor
    xv = st.load.format(x="xr[c]")
    if op == "layer_norm":
        scale = f"{st.load.format(x='gamma[c]')}" if params["affine"] else "1.0f"
        shift = f"{st.load.format(x='beta[c]')}" if params["affine"] else "0.0f"
        out = f"(({xv}) - mean) * inv * {scale} + {shift}"
        extra_args = (
            f"const {st.ctype}* __restrict__ gamma, const {st.ctype}* __restrict__ beta, "
            if params["affine"]
            else ""
        )
        passes = f"""    float s = 0.0f;
{_row_loop(u_count, f"s += {xv};")}
    const float mean = cuvil_block_reduce(s, false, scratch) / (float)cols;
    float q = 0.0f;
{_row_loop(u_count, f"float d = {xv} - mean; q += d * d;")}
    const float inv = rsqrtf(cuvil_block_reduce(q, false, scratch) / (float)cols + eps);
{_row_loop(u_count, f"yr[c] = {st.store.format(v=out)};")}"""
        sig_tail = "long long rows, long long cols, float eps"
    else:
        out = f"expf(({xv}) - m) / s" if op == "softmax" else f"({xv}) - m - logf(s)"
        extra_args = ""
        passes = f"""    float mx = -CUVIL_INF;
{_row_loop(u_count, f"mx = fmaxf(mx, {xv});")}
    const float m = cuvil_block_reduce(mx, true, scratch);
    float t = 0.0f;
{_row_loop(u_count, f"t += expf({xv} - m);")}
    const float s = cuvil_block_reduce(t, false, scratch);
{_row_loop(u_count, f"yr[c] = {st.store.format(v=out)};")}"""
        sig_tail = "long long rows, long long cols"
    body = f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}(const {st.ctype}* __restrict__ x, {extra_args}{st.ctype}* __restrict__ y, {sig_tail}) {{
  __shared__ float scratch[CUVIL_MAX_WARPS];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{
    const {st.ctype}* xr = x + row * cols;
    {st.ctype}* yr = y + row * cols;
{passes}
  }}
}}
"""
    args = "x, gamma, beta, y, rows, cols, eps" if params["affine"] else "x, y, rows, cols"
    if op == "layer_norm" and not params["affine"]:
        args += ", eps"
    return assemble(
        family,
        dtype,
        params,
        options,
        body,
        entry,
        launch=f"grid=min(rows, 65535), block=block_size; args=({args})",
    )
