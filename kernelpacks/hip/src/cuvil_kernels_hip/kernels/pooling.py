"""2-D pooling over NCHW: max, avg, adaptive avg and adaptive max (float storage).

One thread per output element (grid-stride). Window rules follow torch:
fixed windows start at ``o*s - p`` and span ``k`` taps (max pooling also has dilation; padding
never wins a max); average divisors follow ``count_include_pad`` (the padded window is clipped
at ``H + p`` before counting); adaptive windows are ``[floor(o*H/OH), ceil((o+1)*H/OH))``.
``ceil_mode`` is the host's choice of OH/OW. The kw loop carries ``#pragma unroll N``.

Kernel args: ``(x, y, Nb, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)``; adaptive kernels
ignore the window arguments (pass zeros).
"""

from __future__ import annotations

from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

POOL_MODES = ("max", "avg", "adaptive_avg", "adaptive_max")
POOL_GEOMETRY = (
    "long long Nb, int C, int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, "
    "int ph, int pw, int dh, int dw"
)


def window_code(mode: str, count_include_pad: bool) -> str:
    """C statements defining ``h0, h1, w0, w1`` (clipped, step ``dh``/``dw``) and ``count``."""
    if mode.startswith("adaptive"):
        return (
            "const int h0 = (oh * H) / OH, h1 = ((oh + 1) * H + OH - 1) / OH; "
            "const int w0 = (ow * W) / OW, w1 = ((ow + 1) * W + OW - 1) / OW; "
            "const int sdh = 1, sdw = 1; const int count = (h1 - h0) * (w1 - w0);"
        )
    if mode == "max":
        # Dilated taps: keep the tap grid, skip taps outside the input.
        return (
            "const int h0 = oh * sh - ph, w0 = ow * sw - pw; "
            "const int h1 = h0 + (KH - 1) * dh + 1, w1 = w0 + (KW - 1) * dw + 1; "
            "const int sdh = dh, sdw = dw; const int count = 0;"
        )
    count = "(ph1 - hs) * (pw1 - ws)" if count_include_pad else "(h1 - h0) * (w1 - w0)"
    return (
        "const int hs = oh * sh - ph, ws = ow * sw - pw; "
        "const int ph1 = min(hs + KH, H + ph), pw1 = min(ws + KW, W + pw); "
        "const int h0 = max(hs, 0), w0 = max(ws, 0), h1 = min(ph1, H), w1 = min(pw1, W); "
        f"const int sdh = 1, sdw = 1; const int count = {count};"
    )


def pool_loop(unroll: int, visit: str) -> str:
    """Nested window loops calling ``visit`` with in-range ``ih, iw``; kw loop unrolled."""
    return f"""    for (int ih = h0; ih < h1; ih += sdh) {{
      if (ih < 0 || ih >= H) continue;
#pragma unroll {unroll}
      for (int iw = w0; iw < w1; iw += sdw) {{
        if (iw < 0 || iw >= W) continue;
        {visit}
      }}
    }}"""


OUTPUT_LOOP_HEAD = """  const long long total = Nb * C * OH * OW;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < total;
       o += (long long)gridDim.x * blockDim.x) {
    const int ow = (int)(o % OW), oh = (int)((o / OW) % OH);
    const long long plane = o / ((long long)OH * OW);
    const long long xbase = plane * H * W;"""


def pooling_source(
    mode: str, dtype: str, options: KernelOptions, count_include_pad: bool = True
) -> KernelSource:
    """Generate the pooling kernel for ``mode`` (see ``POOL_MODES``)."""
    family = "pool2d"
    st = storage_type(dtype, family)
    if mode not in POOL_MODES:
        raise ValueError(f"pool2d mode {mode!r} is unknown; use one of {POOL_MODES}")
    params: dict[str, object] = {"mode": mode, "count_include_pad": count_include_pad}
    entry = entry_name(family, dtype, params, options)
    xval = st.load.format(x="x[xbase + (long long)ih * W + iw]")
    if mode.endswith("max"):
        init, result = "float acc = -CUVIL_INF;", "acc"
        visit = f"acc = cuvil_max_nan(acc, {xval});"  # NaN propagates, as in torch
    else:
        init, visit = "float acc = 0.0f;", f"acc += {xval};"
        result = "(count > 0 ? acc / (float)count : 0.0f)"
    body = f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}(const {st.ctype}* __restrict__ x, {st.ctype}* __restrict__ y, {POOL_GEOMETRY}) {{
{OUTPUT_LOOP_HEAD}
    {window_code(mode, count_include_pad)}
    {init}
{pool_loop(options.loop_unroll_factor, visit)}
    y[o] = {st.store.format(v=result)};
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
        launch="grid=ceil(Nb*C*OH*OW/block) capped, block=block_size; args=(x, y, "
        + POOL_GEOMETRY.replace("long long ", "").replace("int ", "")
        + ")",
    )
