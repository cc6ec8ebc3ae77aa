"""int8 pooling per the quant spec: qmax_pool2d, qavg_pool2d, qadaptive_avg_pool2d.

Max pooling takes the max of the int8 values (padding never wins); the output keeps the input's
scale and zero point. Average pooling sums ``x - x_zp`` over the counted taps (``count`` as in
float avg_pool2d, see ``pooling.window_code``) and requantizes with ``M``/``shift`` looked up by
``count``: the host fills ``mult[n], shift[n] = quantize_multiplier(s_in / (s_out * n))`` for
every count ``n`` that can occur (1..KH*KW, or the largest adaptive window), so a varying count
at the borders gets its own multiplier exactly as the spec requires.

Kernel args: max ``(x, y, <pool geometry>)``; avg ``(x, y, mult, shift, <pool geometry>, x_zp,
out_zp, qmin, qmax)``.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.epilogue import REQUANT_DEVICE_FN
from cuvil_kernels_hip.kernels.pooling import (
    OUTPUT_LOOP_HEAD,
    POOL_GEOMETRY,
    pool_loop,
    window_code,
)
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

QPOOL_MODES = ("max", "avg", "adaptive_avg")


def qpool_source(mode: str, options: KernelOptions, count_include_pad: bool = True) -> KernelSource:
    """Generate the int8 pooling kernel for ``mode`` (see ``QPOOL_MODES``)."""
    family = "qpool2d"
    if mode not in QPOOL_MODES:
        raise ValueError(f"qpool2d mode {mode!r} is unknown; use one of {QPOOL_MODES}")
    params: dict[str, object] = {"mode": mode, "count_include_pad": count_include_pad}
    entry = entry_name(family, "int8", params, options)
    xval = "(int)x[xbase + (long long)ih * W + iw]"
    if mode == "max":
        sig = f"const signed char* __restrict__ x, signed char* __restrict__ y, {POOL_GEOMETRY}"
        init, visit = "int acc = -128;", f"acc = max(acc, {xval});"
        result = "y[o] = (signed char)acc;"
        prefix = ""
    else:
        sig = (
            "const signed char* __restrict__ x, signed char* __restrict__ y, "
            f"const int* __restrict__ mult, const int* __restrict__ shift, {POOL_GEOMETRY}, "
            "int x_zp, int out_zp, int qmin, int qmax"
        )
        init, visit = "long long acc = 0;", f"acc += {xval} - x_zp;"
        result = (
            "y[o] = count > 0 ? cuvil_requant(acc, mult[count], shift[count], out_zp, qmin, qmax)"
            " : (signed char)out_zp;"
        )
        prefix = REQUANT_DEVICE_FN
    body = f"""{prefix}
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}({sig}) {{
{OUTPUT_LOOP_HEAD}
    {window_code(mode, count_include_pad)}
    {init}
{pool_loop(options.loop_unroll_factor, visit)}
    {result}
  }}
}}
"""
    return assemble(
        family,
        "int8",
        params,
        options,
        body,
        entry,
        launch=f"grid=ceil(Nb*C*OH*OW/block) capped, block=block_size; args=({sig})",
    )
