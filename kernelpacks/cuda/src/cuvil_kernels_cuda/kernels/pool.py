"""2-D pooling over NCHW: max_pool2d, avg_pool2d and adaptive_avg_pool2d, one thread per output.

Output sizes, ``ceil_mode`` (a last window must start inside the input or left padding) and
``count_include_pad`` (the divisor counts padding but not the ceil_mode overhang) follow torch.
max propagates NaN. :func:`pool_geometry` and :func:`window` are shared with the int8 pools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.conv import pair

_INF = float("inf")
# Indices into the geometry table.
N, C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, INCLUDE_PAD, ADAPTIVE = range(16)


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool_geometry(
    shape: Sequence[int],
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    op: str,
) -> list[int]:
    if len(shape) != 4:
        raise ValueError(f"{op}: need an NCHW input, got shape {tuple(shape)}")
    n, c, h, w = (int(s) for s in shape)
    (kh, kw) = pair(kernel_size)
    (sh, sw) = pair(stride if stride is not None and stride != [] else kernel_size)
    (ph, pw), (dh, dw) = pair(padding), pair(dilation)
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"{op}: padding {(ph, pw)} must be at most half the kernel {(kh, kw)}")
    oh = _out_size(h, kh, sh, ph, dh, ceil_mode)
    ow = _out_size(w, kw, sw, pw, dw, ceil_mode)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: output would be {oh}x{ow} for input {h}x{w}")
    return [n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, int(count_include_pad), 0]


@cuda.jit(device=True)
def window(geo, oh, ow):  # noqa: ANN001, ANN202
    """(h0, h1, w0, w1, count) of an output position; h1/w1 exclusive, clipped to the input."""
    if geo[ADAPTIVE]:
        h0 = (oh * geo[H]) // geo[OH]
        h1 = ((oh + 1) * geo[H] + geo[OH] - 1) // geo[OH]
        w0 = (ow * geo[W]) // geo[OW]
        w1 = ((ow + 1) * geo[W] + geo[OW] - 1) // geo[OW]
        return h0, h1, w0, w1, (h1 - h0) * (w1 - w0)
    h0 = oh * geo[SH] - geo[PH]
    w0 = ow * geo[SW] - geo[PW]
    h1 = min(h0 + geo[KH], geo[H] + geo[PH])
    w1 = min(w0 + geo[KW], geo[W] + geo[PW])
    padded = (h1 - h0) * (w1 - w0)
    h0 = max(h0, 0)
    w0 = max(w0, 0)
    h1 = min(h1, geo[H])
    w1 = min(w1, geo[W])
    if geo[INCLUDE_PAD]:
        return h0, h1, w0, w1, padded
    return h0, h1, w0, w1, (h1 - h0) * (w1 - w0)


@cuda.jit
def _max_pool_kernel(out, x, geo, n_out):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n_out:
        ow = i % geo[OW]
        oh = (i // geo[OW]) % geo[OH]
        plane = i // (geo[OW] * geo[OH])
        base = plane * geo[H] * geo[W]
        best = float32(-_INF)
        for ky in range(geo[KH]):
            ih = oh * geo[SH] - geo[PH] + ky * geo[DH]
            if ih >= 0 and ih < geo[H]:
                for kx in range(geo[KW]):
                    iw = ow * geo[SW] - geo[PW] + kx * geo[DW]
                    if iw >= 0 and iw < geo[W]:
                        v = float32(x[base + ih * geo[W] + iw])
                        if v != v or v > best:
                            best = v
        out[i] = best


@cuda.jit
def _avg_pool_kernel(out, x, geo, n_out, divisor):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n_out:
        ow = i % geo[OW]
        oh = (i // geo[OW]) % geo[OH]
        plane = i // (geo[OW] * geo[OH])
        base = plane * geo[H] * geo[W]
        h0, h1, w0, w1, count = window(geo, oh, ow)
        s = float32(0.0)
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                s += float32(x[base + ih * geo[W] + iw])
        if divisor > 0:
            out[i] = s / float32(divisor)
        else:
            out[i] = s / float32(count)


def _launch(kernel: Any, x: Any, geo: list[int], op: str, *extra: Any) -> Any:
    xd = common.as_device(x)
    dtype = common.check_float(op, xd.dtype)
    res = cuda.device_array((geo[N], geo[C], geo[OH], geo[OW]), dtype=dtype)
    n_out = res.size
    if n_out:
        tpb = common.threads_1d()
        common.launch(
            kernel,
            common.blocks_for(n_out, tpb),
            tpb,
            common.flat(res),
            common.flat(xd),
            common.i64(geo),
            n_out,
            *extra,
        )
    return res


def max_pool2d(
    x: Any,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Any:
    """``torch.nn.functional.max_pool2d`` (values only); padding never wins."""
    geo = pool_geometry(
        _shape(x), kernel_size, stride, padding, dilation, ceil_mode, False, "max_pool2d"
    )
    return _launch(_max_pool_kernel, x, geo, "max_pool2d")


def avg_pool2d(
    x: Any,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """``torch.nn.functional.avg_pool2d``."""
    geo = pool_geometry(
        _shape(x), kernel_size, stride, padding, 1, ceil_mode, count_include_pad, "avg_pool2d"
    )
    return _launch(_avg_pool_kernel, x, geo, "avg_pool2d", int(divisor_override or 0))


def adaptive_geometry(shape: Sequence[int], output_size: int | Sequence[int], op: str) -> list[int]:
    if len(shape) != 4:
        raise ValueError(f"{op}: need an NCHW input, got shape {tuple(shape)}")
    n, c, h, w = (int(s) for s in shape)
    oh, ow = pair(output_size)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: output_size {(oh, ow)} must be positive")
    return [n, c, h, w, oh, ow, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1]


def adaptive_avg_pool2d(x: Any, output_size: int | Sequence[int]) -> Any:
    """``torch.nn.functional.adaptive_avg_pool2d``: window [floor(i*H/OH), ceil((i+1)*H/OH))."""
    geo = adaptive_geometry(_shape(x), output_size, "adaptive_avg_pool2d")
    return _launch(_avg_pool_kernel, x, geo, "adaptive_avg_pool2d", 0)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in (x.shape if hasattr(x, "shape") else np.shape(x)))
