"""int8 GEMM (qlinear / qmatmul) and implicit-GEMM qconv2d, bit-exact per the quant spec.

``acc = bias[c] + sum_k (a - a_zp) * (b - b_zp)`` accumulates exactly in int32 (``b_zp`` only for
qmatmul, weights are symmetric), then ``cuvil_requant`` applies the per-channel (qlinear: column
``n``; qconv: output channel) or per-tensor (``per_channel=False``: index 0) ``M``/``shift`` in
int64. Conv padding contributes 0, as padding ``x`` with ``x_zp`` would.

The WMMA qlinear variant multiplies the raw int8 values on tensor cores and subtracts
``a_zp * wsum[n]`` (``wsum[n] = sum_k w[n, k]``, computed on the host) afterwards; on HIP the
same source compiles the SIMT loop, which ignores ``wsum``.

Kernel args (qgemm): ``(A, B, [bias], [wsum], C, mult, shift, M, N, K, sa, sb, a_zp, b_zp,
out_zp, qmin, qmax)``; (qconv2d): ``(x, w, [bias], y, mult, shift, <conv geometry>, x_zp,
out_zp, qmin, qmax)``.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.conv2d import (
    CONV_GEOMETRY,
    CONV_OUT_COORDS,
    CONV_PROLOGUE,
    im2col_gather,
)
from cuvil_kernels_hip.kernels.epilogue import REQUANT_DEVICE_FN
from cuvil_kernels_hip.kernels.tiled_core import tiled_gemm_kernel, tiled_launch
from cuvil_kernels_hip.kernels.wmma_core import wmma_gemm_kernel, wmma_includes
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

I8 = "signed char"
REQ_TAIL = "int out_zp, int qmin, int qmax"


def check_int32_accumulation(k: int, max_abs_bias: int, op: str) -> None:
    """Raise unless ``k * 255 * 128 + |bias| < 2**31`` (no int32 overflow), naming ``op``."""
    bound = k * 255 * 128 + abs(max_abs_bias)
    if bound >= 2**31:
        raise ValueError(
            f"{op}: int32 accumulation could overflow (K={k}, max |bias|={max_abs_bias}, "
            f"bound {bound} >= 2**31); split K or use a float path"
        )


def _requant_store(channel: str, out: str, bias: bool, correction: str = "") -> str:
    bias_term = f" + (long long)bias[{channel}]" if bias else ""
    return (
        f"const long long acc = (long long)a{correction}{bias_term}; "
        f"{out} = cuvil_requant(acc, mult[{channel}], shift[{channel}], out_zp, qmin, qmax);"
    )


def qgemm_source(
    options: KernelOptions,
    bias: bool = True,
    per_channel: bool = True,
    b_zero_point: bool = False,
    trans_b: bool = True,
    variant: str = "simt",
    micro: int = 2,
) -> KernelSource:
    """Generate qlinear (``trans_b``, per-channel weights) or qmatmul (``b_zero_point``)."""
    family = "qgemm"
    if variant not in ("simt", "wmma"):
        raise ValueError(f"qgemm variant {variant!r} is unknown; use 'simt' or 'wmma'")
    if variant == "wmma" and (b_zero_point or not trans_b):
        raise ValueError(
            "qgemm: the wmma variant needs symmetric [N, K] weights (trans_b=True, "
            "b_zero_point=False); use variant='simt' for qmatmul"
        )
    if variant == "wmma":
        micro = 4
    params: dict[str, object] = {
        "bias": bias,
        "per_channel": per_channel,
        "b_zero_point": b_zero_point,
        "trans_b": trans_b,
        "variant": variant,
        "micro": micro,
    }
    entry = entry_name(family, "int8", params, options)
    sig = f"const {I8}* __restrict__ A, const {I8}* __restrict__ B, "
    sig += "const int* __restrict__ bias, " if bias else ""
    sig += "const int* __restrict__ wsum, " if variant == "wmma" else ""
    sig += (
        f"{I8}* __restrict__ C, const int* __restrict__ mult, const int* __restrict__ shift, "
        f"int M, int N, int K, long long sa, long long sb, int a_zp, int b_zp, {REQ_TAIL}"
    )
    prologue = (
        f"  const {I8}* Az = A + (long long)z * sa;\n  const {I8}* Bz = B + (long long)z * sb;"
    )
    load_a = "val = (int)Az[(long long)gm * K + gk] - a_zp;"
    b_index = "(long long)gn * K + gk" if trans_b else "(long long)gk * N + gn"
    load_b = f"val = (int)Bz[{b_index}]" + (" - b_zp;" if b_zero_point else ";")
    channel = "gn" if per_channel else "0"
    out = "C[((long long)z * M + gm) * N + gn]"
    simt = tiled_gemm_kernel(
        entry,
        sig,
        prologue,
        load_a,
        load_b,
        _requant_store(channel, out, bias),
        "int",
        micro,
        options.loop_unroll_factor,
    )
    if variant == "simt":
        body = REQUANT_DEVICE_FN + simt
    else:
        store = _requant_store(channel, out, bias, correction=" - (long long)a_zp * wsum[gn]")
        wmma = wmma_gemm_kernel(
            entry, sig, prologue, "Az", "Bz", True, store, "int8", options.loop_unroll_factor
        )
        body = (
            REQUANT_DEVICE_FN + f"\n#if defined(CUVIL_CUDA)\n{wmma_includes('int8')}{wmma}"
            f"#else{simt}#endif\n"
        )
    return assemble(
        family,
        "int8",
        params,
        options,
        body,
        entry,
        launch=tiled_launch(micro, "M", "N", "batch") + "; args=(A, B, [bias], [wsum], C, mult, "
        "shift, M, N, K, sa, sb, a_zp, b_zp, out_zp, qmin, qmax)",
    )


def qconv2d_source(options: KernelOptions, bias: bool = True, micro: int = 2) -> KernelSource:
    """Generate the int8 implicit-GEMM conv2d with per-output-channel requantization."""
    family = "qconv2d"
    params: dict[str, object] = {"bias": bias, "micro": micro}
    entry = entry_name(family, "int8", params, options)
    sig = f"const {I8}* __restrict__ x, const {I8}* __restrict__ w, "
    sig += "const int* __restrict__ bias, " if bias else ""
    sig += (
        f"{I8}* __restrict__ y, const int* __restrict__ mult, const int* __restrict__ shift, "
        f"{CONV_GEOMETRY}, int x_zp, {REQ_TAIL}"
    )
    load_a = "val = (int)w[(long long)(g * OCg + gm) * K + gk];"
    load_b = im2col_gather("(int){x} - x_zp")
    store = f"{CONV_OUT_COORDS} {_requant_store('ch', 'y[oidx]', bias)}"
    body = REQUANT_DEVICE_FN + tiled_gemm_kernel(
        entry,
        sig,
        CONV_PROLOGUE,
        load_a,
        load_b,
        store,
        "int",
        micro,
        options.loop_unroll_factor,
    )
    return assemble(
        family,
        "int8",
        params,
        options,
        body,
        entry,
        launch=tiled_launch(micro, "OC/groups", "Nb*OH*OW", "groups")
        + "; args=(x, w, [bias], y, mult, shift, <geometry>, x_zp, out_zp, qmin, qmax)",
    )
