"""Implicit-GEMM conv2d (NCHW) with a fused epilogue: stride, padding, dilation, groups.

Per group ``g`` (``blockIdx.z``) the convolution is the GEMM ``M = OC/groups`` (output channels),
``N = batch*OH*OW`` (output pixels), ``K = (C/groups)*KH*KW``; the weight ``[OC, C/g, KH, KW]`` is
A row-major and the im2col matrix B is never materialized: each B element is gathered from the
input on the fly, and padding loads zero. Depthwise is ``groups == C == OC``. All geometry is a
kernel argument, so one compiled module serves every shape.

Kernel args: ``(x, w, [bias], [residual], y, Nb, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw,
groups, OH, OW)``.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.epilogue import NO_EPILOGUE, Epilogue, float_epilogue
from cuvil_kernels_hip.kernels.tiled_core import tiled_gemm_kernel, tiled_launch
from cuvil_kernels_hip.prelude import storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

CONV_GEOMETRY = (
    "int Nb, int C, int H, int W, int OC, int KH, int KW, int sh, int sw, int ph, int pw, "
    "int dh, int dw, int groups, int OH, int OW"
)

CONV_PROLOGUE = """  const int g = z, Cg = C / groups, OCg = OC / groups;
  const int M = OCg, N = Nb * OH * OW, K = Cg * KH * KW;"""

# Output coordinates of GEMM column gn, and the output/channel index of (gm, gn).
CONV_OUT_COORDS = (
    "const int onb = gn / (OH * OW), op = gn % (OH * OW), ooh = op / OW, oow = op % OW; "
    "const int ch = g * OCg + gm; "
    "const long long oidx = (((long long)onb * OC + ch) * OH + ooh) * OW + oow;"
)


def im2col_gather(load_x: str) -> str:
    """C statements setting ``val`` from the input element behind B(gk, gn), if not padding.

    ``load_x`` is a format string with ``{x}`` (the input element expression).
    """
    element = "x[(((long long)nb * C + g * Cg + c) * H + ih) * W + iw]"
    return (
        "const int c = gk / (KH * KW), r = gk % (KH * KW), kh = r / KW, kw = r % KW; "
        "const int nb = gn / (OH * OW), p = gn % (OH * OW), oh = p / OW, ow = p % OW; "
        "const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw; "
        f"if (ih >= 0 && ih < H && iw >= 0 && iw < W) val = {load_x.format(x=element)};"
    )


def conv2d_source(
    dtype: str, options: KernelOptions, epilogue: Epilogue = NO_EPILOGUE, micro: int = 2
) -> KernelSource:
    """Generate the float implicit-GEMM conv2d with ``epilogue`` (bias per output channel)."""
    family = "conv2d"
    st = storage_type(dtype, family)
    params: dict[str, object] = {**epilogue.as_params(), "micro": micro}
    entry = entry_name(family, dtype, params, options)
    t = st.ctype
    sig = f"const {t}* __restrict__ x, const {t}* __restrict__ w, "
    sig += f"const {t}* __restrict__ bias, " if epilogue.bias else ""
    sig += f"const {t}* __restrict__ residual, " if epilogue.residual else ""
    sig += f"{t}* __restrict__ y, {CONV_GEOMETRY}"
    load_a = f"val = {st.load.format(x='w[(long long)(g * OCg + gm) * K + gk]')};"
    load_b = im2col_gather(st.load)
    store = (
        f"{CONV_OUT_COORDS} {float_epilogue(epilogue, 'a', 'ch', 'oidx', st.load)} "
        f"y[oidx] = {st.store.format(v='v')};"
    )
    body = tiled_gemm_kernel(
        entry,
        sig,
        CONV_PROLOGUE,
        load_a,
        load_b,
        store,
        "float",
        micro,
        options.loop_unroll_factor,
    )
    return assemble(
        family,
        dtype,
        params,
        options,
        body,
        entry,
        launch=tiled_launch(micro, "OC/groups", "Nb*OH*OW", "groups")
        + f"; args=(x, w, [bias], [residual], y, {CONV_GEOMETRY.replace('int ', '')})",
    )
