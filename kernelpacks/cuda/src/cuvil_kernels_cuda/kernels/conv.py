"""conv2d (NCHW) as an implicit GEMM with the fused GEMM epilogue.

Per group g: rows are output pixels ``(n, oh, ow)``, columns are the group's output channels and the
reduction runs over ``(c, ky, kx)``. The A tile is gathered from the input on the fly (im2col
without materializing it; padding reads 0), the B tile is the weight (O, C/g, kh, kw) read in place.
Stride, padding, dilation and groups (depthwise included) are geometry parameters, not variants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32

from cuvil_kernels_cuda.kernels import common, epilogue_device
from cuvil_kernels_cuda.kernels.epilogue import NO_EPILOGUE, Epilogue

# Indices into the geometry table passed to the kernel.
N, C, H, W, OC, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, G = range(16)


def _build(tile: int, key: tuple[str, bool], has_bias: bool, has_res: bool) -> Any:
    apply = epilogue_device.build(key, has_bias, has_res)

    @cuda.jit
    def conv_kernel(out, x, w, geo, bias, res, ap):  # noqa: ANN001, ANN202
        sa = cuda.shared.array((tile, tile), float32)
        sb = cuda.shared.array((tile, tile), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        g = cuda.blockIdx.z
        cg = geo[C] // geo[G]
        og = geo[OC] // geo[G]
        kh = geo[KH]
        kw = geo[KW]
        hw_out = geo[OH] * geo[OW]
        m_total = geo[N] * hw_out
        k_total = cg * kh * kw
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        # The pixel this thread loads A for (row of the A tile = this thread's row).
        n = row // hw_out
        p = row - n * hw_out
        oh = p // geo[OW]
        ow = p - oh * geo[OW]
        acc = float32(0.0)
        for k0 in range(0, k_total, tile):
            ka = k0 + tx
            v = float32(0.0)
            if row < m_total and ka < k_total:
                c = ka // (kh * kw)
                r = ka - c * kh * kw
                ky = r // kw
                kx = r - ky * kw
                ih = oh * geo[SH] - geo[PH] + ky * geo[DH]
                iw = ow * geo[SW] - geo[PW] + kx * geo[DW]
                if ih >= 0 and ih < geo[H] and iw >= 0 and iw < geo[W]:
                    ch = g * cg + c
                    v = float32(x[((n * geo[C] + ch) * geo[H] + ih) * geo[W] + iw])
            sa[ty, tx] = v
            kb = k0 + ty
            if kb < k_total and col < og:
                sb[ty, tx] = float32(w[(g * og + col) * k_total + kb])
            else:
                sb[ty, tx] = float32(0.0)
            cuda.syncthreads()
            for kk in range(tile):
                acc += sa[ty, kk] * sb[kk, tx]
            cuda.syncthreads()
        if row < m_total and col < og:
            oc = g * og + col
            idx = (n * geo[OC] + oc) * hw_out + p
            out[idx] = apply(acc, oc, idx, bias, res, ap)

    return conv_kernel


def pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def conv_geometry(
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
    op: str = "conv2d",
) -> list[int]:
    """The 16-entry geometry table (see the index names above), validated."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ValueError(f"{op}: need NCHW input and (O, C/groups, kh, kw) weight, got "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")  # fmt: skip
    n, c, h, w = (int(d) for d in x_shape)
    o, cg, kh, kw = (int(d) for d in w_shape)
    if groups < 1 or c % groups or o % groups or cg != c // groups:
        raise ValueError(f"{op}: groups={groups} does not fit {c} input / {o} output channels "
                         f"with weight {tuple(w_shape)}")  # fmt: skip
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: output would be {oh}x{ow} for input {h}x{w}, kernel {kh}x{kw}")
    return [n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups]


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    residual: Any = None,
    epilogue: Epilogue = NO_EPILOGUE,
) -> Any:
    """``torch.nn.functional.conv2d`` semantics (NCHW, float32/float16), plus the epilogue."""
    xd, wd = common.as_device(x), common.as_device(weight)
    dtype = common.check_float("conv2d", xd.dtype, wd.dtype)
    geo = conv_geometry(xd.shape, wd.shape, stride, padding, dilation, groups)
    out_shape = (geo[N], geo[OC], geo[OH], geo[OW])
    res = cuda.device_array(out_shape, dtype=dtype)
    bias_d = common.as_device(np.zeros(1, np.float32) if bias is None else bias)
    if bias is not None and bias_d.size != geo[OC]:
        raise ValueError(f"conv2d: bias has {bias_d.size} values, expected {geo[OC]}")
    res_d = common.as_device(np.zeros(1, np.float32) if residual is None else residual)
    if residual is not None and tuple(res_d.shape) != out_shape:
        raise ValueError(f"conv2d: residual shape {tuple(res_d.shape)} != output {out_shape}")
    tile = common.gemm_tile()
    has_bias, has_res = bias is not None, residual is not None
    key = ("conv2d", tile, epilogue.key(), has_bias, has_res)
    kernel = common.cached(key, lambda: _build(tile, epilogue.key(), has_bias, has_res))
    m = geo[N] * geo[OH] * geo[OW]
    grid = (common.blocks_for(geo[OC] // groups, tile), common.blocks_for(m, tile), groups)
    common.launch(kernel, grid, (tile, tile),
        common.flat(res), common.flat(xd), common.flat(wd), common.i64(geo),
        common.flat(bias_d), common.flat(res_d), common.f32((epilogue.act_min, epilogue.act_max)),
    )  # fmt: skip
    return res
