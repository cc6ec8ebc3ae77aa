"""Elementwise int8 kernels, bit-exact per the pinned quant spec.

* ``quantize``: ``t = x / scale`` (IEEE fp32 division, never a reciprocal multiply), then
  ``clamp(rint(t) + zp, -128, 127)`` with ``rintf`` (half to even); NaN -> zp, +-inf saturate.
* ``dequantize``: ``float(q - zp) * scale``.
* ``requantize``: ``clamp(out_zp + rescale(q - zp, M, shift), qmin, qmax)``.
* ``qadd``: shared shift, ``acc = (a - a_zp) * M_a + (b - b_zp) * M_b`` in int64, one rounding.
* ``qmul``: ``acc = (a - a_zp) * (b - b_zp)``, then the requantized output.

Multipliers, shifts, zero points and clamp bounds are kernel arguments computed on the host
(``quantize_multiplier`` in ``cuvil_ref.ops.qarith``). All integer kernel args are ``int``
except element counts (``long long``); scales are ``float``.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.epilogue import REQUANT_DEVICE_FN
from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

QUANT_ELEMENTWISE_OPS = ("quantize", "dequantize", "requantize", "qadd", "qmul")

FDIV = """
#if defined(CUVIL_CUDA)
#define CUVIL_FDIV_RN(a, b) __fdiv_rn((a), (b))
#else
#define CUVIL_FDIV_RN(a, b) ((a) / (b))  // HIP: fp32 division is correctly rounded by default
#endif
// Quant spec quantize: rint(x / scale) + zp, saturated; NaN -> zp.
__device__ __forceinline__ signed char cuvil_quantize(float x, float scale, int zp) {
  const float t = CUVIL_FDIV_RN(x, scale);
  if (t != t) return (signed char)zp;
  // Clip before converting: float->int of a huge value is undefined; +-1024 saturates anyway.
  const int r = (int)fminf(fmaxf(rintf(t), -1024.0f), 1024.0f) + zp;
  return (signed char)(r < -128 ? -128 : (r > 127 ? 127 : r));
}
"""


def _elementwise_kernel(entry: str, sig: str, stmt: str, options: KernelOptions) -> str:
    u_count = options.loop_unroll_factor
    steps = "\n".join(
        f"    {{ long long i = base + {u} * stride; if (i < n) {{ {stmt} }} }}"
        for u in range(u_count)
    )
    return f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}({sig}, long long n) {{
  const long long stride = (long long)gridDim.x * blockDim.x;
  // {u_count} elements per thread per iteration (loop_unroll_factor)
  for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < n;
       base += stride * {u_count}) {{
{steps}
  }}
}}
"""


def quant_elementwise_source(
    op: str, options: KernelOptions, float_dtype: str = "float32"
) -> KernelSource:
    """Generate one int8 elementwise kernel; ``float_dtype`` is the float side's storage."""
    family = "quant_elementwise"
    if op not in QUANT_ELEMENTWISE_OPS:
        raise ValueError(
            f"quant elementwise op {op!r} is unknown; use one of {QUANT_ELEMENTWISE_OPS}"
        )
    st = storage_type(float_dtype, family)
    params: dict[str, object] = {"op": op, "float_dtype": float_dtype}
    entry = entry_name(family, "int8", params, options)
    i8 = "signed char"
    req_args = "int mult, int shift, int out_zp, int qmin, int qmax"
    if op == "quantize":
        sig = f"const {st.ctype}* __restrict__ x, {i8}* __restrict__ y, float scale, int zp"
        stmt = f"y[i] = cuvil_quantize({st.load.format(x='x[i]')}, scale, zp);"
    elif op == "dequantize":
        sig = f"const {i8}* __restrict__ q, {st.ctype}* __restrict__ y, float scale, int zp"
        stmt = f"y[i] = {st.store.format(v='(float)((int)q[i] - zp) * scale')};"
    elif op == "requantize":
        sig = f"const {i8}* __restrict__ x, {i8}* __restrict__ y, int x_zp, {req_args}"
        stmt = (
            "y[i] = cuvil_requant((long long)((int)x[i] - x_zp), mult, shift, out_zp, qmin, qmax);"
        )
    elif op == "qmul":
        sig = (
            f"const {i8}* __restrict__ a, const {i8}* __restrict__ b, {i8}* __restrict__ y, "
            f"int a_zp, int b_zp, {req_args}"
        )
        stmt = (
            "y[i] = cuvil_requant((long long)((int)a[i] - a_zp) * (long long)((int)b[i] - b_zp), "
            "mult, shift, out_zp, qmin, qmax);"
        )
    else:  # qadd
        sig = (
            f"const {i8}* __restrict__ a, const {i8}* __restrict__ b, {i8}* __restrict__ y, "
            "int a_zp, int b_zp, int mult_a, int mult_b, int shift, int out_zp, int qmin, "
            "int qmax"
        )
        stmt = (
            "y[i] = cuvil_qadd((int)a[i] - a_zp, (int)b[i] - b_zp, mult_a, mult_b, shift, "
            "out_zp, qmin, qmax);"
        )
    body = REQUANT_DEVICE_FN + FDIV + _elementwise_kernel(entry, sig, stmt, options)
    return assemble(
        family,
        "int8",
        params,
        options,
        body,
        entry,
        launch=f"grid=ceil(n/(block*unroll)) capped, block=block_size; args=({sig}, n)",
    )
