"""int8 pooling: qmax_pool2d (max of int8 values, padding never wins, same scale/zp) and
qavg_pool2d / qadaptive_avg_pool2d (integer window sum, then requantization whose ``(M, shift)``
depends on the counted window size ``n``: a host table indexed by ``n``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, int64

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.pool import (
    DH,
    DW,
    KH,
    KW,
    OH,
    OW,
    PH,
    PW,
    SH,
    SW,
    H,
    W,
    adaptive_geometry,
    pool_geometry,
    window,
)  # fmt: skip
from cuvil_kernels_cuda.kernels.quant import INT8, _check_int8, _launch_1d
from cuvil_kernels_cuda.kernels.quant_device import requant
from cuvil_ref.ops import qarith


@cuda.jit
def _qmax_kernel(out, x, geo, n_out):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n_out:
        ow = i % geo[OW]
        oh = (i // geo[OW]) % geo[OH]
        base = (i // (geo[OW] * geo[OH])) * geo[H] * geo[W]
        best = int64(-128)
        for ky in range(geo[KH]):
            ih = oh * geo[SH] - geo[PH] + ky * geo[DH]
            if ih >= 0 and ih < geo[H]:
                for kx in range(geo[KW]):
                    iw = ow * geo[SW] - geo[PW] + kx * geo[DW]
                    if iw >= 0 and iw < geo[W]:
                        v = int64(x[base + ih * geo[W] + iw])
                        if v > best:
                            best = v
        out[i] = best


@cuda.jit
def _qavg_kernel(out, x, geo, n_out, mults, shifts, p):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n_out:
        ow = i % geo[OW]
        oh = (i // geo[OW]) % geo[OH]
        base = (i // (geo[OW] * geo[OH])) * geo[H] * geo[W]
        h0, h1, w0, w1, count = window(geo, oh, ow)
        acc = int64(0)
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                acc += int64(x[base + ih * geo[W] + iw]) - p[0]
        out[i] = requant(acc, mults[count], shifts[count], p[1], p[2], p[3])


def _run(kernel: Any, x: Any, geo: list[int], op: str, *extra: Any) -> Any:
    xd = common.as_device(x)
    _check_int8(op, xd)
    res = cuda.device_array((geo[0], geo[1], geo[OH], geo[OW]), dtype=INT8)
    _launch_1d(
        kernel, res.size, common.flat(res), common.flat(xd), common.i64(geo), res.size, *extra
    )
    return res


def qmax_pool2d(
    x: Any,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Any:
    """Max of the int8 values in each window; the output keeps the input's scale and zp."""
    shape = tuple(x.shape)
    geo = pool_geometry(
        shape, kernel_size, stride, padding, dilation, ceil_mode, False, "qmax_pool2d"
    )
    return _run(_qmax_kernel, x, geo, "qmax_pool2d")


def _count_tables(max_n: int, in_scale: float, out_scale: float) -> tuple[Any, Any]:
    """``(M[n], shift[n])`` of ``s_in / (s_out * n)`` for n in 1..max_n (entry 0 unused)."""
    s_in, s_out = float(np.float32(in_scale)), float(np.float32(out_scale))
    mults, shifts = qarith.quantize_multipliers([s_in / (s_out * n) for n in range(1, max_n + 1)])
    return (
        cuda.to_device(np.concatenate([[0], mults]).astype(np.int64)),
        cuda.to_device(np.concatenate([[1], shifts]).astype(np.int64)),
    )


def _avg(x: Any, geo: list[int], max_n: int, in_scale: float, in_zp: int, out_scale: float,
         out_zp: int, op: str) -> Any:  # fmt: skip
    mults, shifts = _count_tables(max_n, in_scale, out_scale)
    qmin, qmax = qarith.relu_bounds(None, out_scale, out_zp)
    params = common.i64([int(in_zp), int(out_zp), qmin, qmax])
    return _run(_qavg_kernel, x, geo, op, mults, shifts, params)


def qavg_pool2d(
    x: Any, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
    kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
) -> Any:  # fmt: skip
    """Integer window sum of ``x - in_zp`` requantized by ``s_in / (s_out * n)``."""
    geo = pool_geometry(
        tuple(x.shape), kernel_size, stride, padding, 1, ceil_mode, count_include_pad, "qavg_pool2d"
    )
    max_n = geo[KH] * geo[KW]
    return _avg(x, geo, max_n, in_scale, in_zp, out_scale, out_zp, "qavg_pool2d")


def qadaptive_avg_pool2d(
    x: Any, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
    output_size: int | Sequence[int],
) -> Any:  # fmt: skip
    """Adaptive average pooling in int8; windows (and so M, shift) vary by position."""
    geo = adaptive_geometry(tuple(x.shape), output_size, "qadaptive_avg_pool2d")
    max_n = geo[H] * geo[W]
    return _avg(x, geo, max_n, in_scale, in_zp, out_scale, out_zp, "qadaptive_avg_pool2d")
