"""int8 kernels, bit-exact to the pinned quant spec: quantize, dequantize, requantize, qadd, qmul,
qlinear, qconv2d, qmax_pool2d, qavg_pool2d, qadaptive_avg_pool2d.

Host wrappers turn float32 scales into fixed-point ``(M, shift)`` with ``cuvil_ref.ops.qarith``
(the single source of that math) and assert the int32 accumulator bound; kernels do only integer
work (int64 products, arithmetic shifts) plus the one float32 division of ``quantize``.
qlinear/qconv2d use one thread per output (direct loops), which is exact and simple; tiling them
like the float GEMM is future work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32, int64

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.conv import (
    DH,
    DW,
    KH,
    KW,
    OC,
    OH,
    OW,
    PH,
    PW,
    SH,
    SW,
    C,
    G,
    H,
    W,
    conv_geometry,
)
from cuvil_kernels_cuda.kernels.indexing import strided_pos
from cuvil_kernels_cuda.kernels.quant_device import quantize_one, requant
from cuvil_ref.ops import qarith

INT8 = np.dtype(np.int8)


def _check_int8(op: str, *arrays: Any) -> None:
    for a in arrays:
        if np.dtype(a.dtype) != INT8:
            raise TypeError(f"{op}: expected int8 input, got {a.dtype}; quantize it first")


def _launch_1d(kernel: Any, n: int, *args: Any) -> None:
    if n:
        tpb = common.threads_1d()
        common.launch(kernel, common.blocks_for(n, tpb), tpb, *args)


# --- elementwise ----------------------------------------------------------------------------------


@cuda.jit
def _quantize_kernel(out, x, shape, xs, xo, n, scale, zp):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        out[i] = quantize_one(x[strided_pos(i, shape, xs, xo)], scale, zp, -128, 127)


@cuda.jit
def _dequantize_kernel(out, q, shape, qs, qo, n, scale, zp):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        out[i] = float32(int64(q[strided_pos(i, shape, qs, qo)]) - zp) * scale


@cuda.jit
def _requantize_kernel(out, q, shape, qs, qo, n, p):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        acc = int64(q[strided_pos(i, shape, qs, qo)]) - p[0]
        out[i] = requant(acc, p[1], p[2], p[3], p[4], p[5])


def _shape1(t: common.Strided) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (t.shape or (1,)), (t.strides or (0,))


def quantize(x: Any, scale: float, zero_point: int) -> Any:
    """float32/float16 -> int8: ``clamp(rint(x / scale) + zp)`` (float32 IEEE division)."""
    t = common.strided(x, "quantize")
    common.check_float("quantize", t.dtype)
    qarith.quantize(np.zeros(1, np.float32), scale, zero_point)  # validates scale and zp
    res = cuda.device_array(t.shape, dtype=INT8)
    shape, strides = _shape1(t)
    _launch_1d(
        _quantize_kernel, t.size, common.flat(res), t.data, common.i64(shape),
        common.i64(strides), t.offset, t.size, np.float32(scale), int(zero_point),
    )  # fmt: skip
    return res


def dequantize(q: Any, scale: float, zero_point: int) -> Any:
    """int8 -> float32: ``float32(q - zp) * float32(scale)``."""
    t = common.strided(q, "dequantize")
    _check_int8("dequantize", t)
    res = cuda.device_array(t.shape, dtype=np.float32)
    shape, strides = _shape1(t)
    _launch_1d(
        _dequantize_kernel, t.size, common.flat(res), t.data, common.i64(shape),
        common.i64(strides), t.offset, t.size, np.float32(scale), int(zero_point),
    )  # fmt: skip
    return res


def requantize(q: Any, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> Any:
    """int8 -> int8 in new (scale, zp): ``requantize_output(q - in_zp, M, shift, out_zp)``."""
    t = common.strided(q, "requantize")
    _check_int8("requantize", t)
    mult, shift = qarith.quantize_multiplier(
        float(np.float32(in_scale)) / float(np.float32(out_scale))
    )
    res = cuda.device_array(t.shape, dtype=INT8)
    shape, strides = _shape1(t)
    params = common.i64([int(in_zp), mult, shift, int(out_zp), -128, 127])
    _launch_1d(
        _requantize_kernel, t.size, common.flat(res), t.data, common.i64(shape),
        common.i64(strides), t.offset, t.size, params,
    )  # fmt: skip
    return res


def _build_binary(is_add: bool) -> Any:
    @cuda.jit
    def qbinary_kernel(out, n, shape, a, as_, ao, b, bs, bo, p):  # noqa: ANN001, ANN202
        i = cuda.grid(1)
        if i < n:
            da = int64(a[strided_pos(i, shape, as_, ao)]) - p[0]
            db = int64(b[strided_pos(i, shape, bs, bo)]) - p[1]
            if is_add:
                # Shared shift: one rounding of the sum, M_a and M_b on the same scale.
                out[i] = requant(da * p[5] + db * p[6], 1, p[7], p[2], p[3], p[4])
            else:
                out[i] = requant(da * db, p[5], p[7], p[2], p[3], p[4])

    return qbinary_kernel


def _binary(op: str, a: Any, b: Any, params: list[int]) -> Any:
    ta, tb = common.strided(a, op), common.strided(b, op)
    _check_int8(op, ta, tb)
    shape = tuple(int(d) for d in np.broadcast_shapes(ta.shape, tb.shape))
    res = cuda.device_array(shape, dtype=INT8)
    n = res.size
    ls = shape or (1,)
    kernel = common.cached(("qbinary", op), lambda: _build_binary(op == "qadd"))
    _launch_1d(
        kernel, n, common.flat(res), n, common.i64(ls),
        ta.data, common.i64(ta.broadcast_to(ls)), ta.offset,
        tb.data, common.i64(tb.broadcast_to(ls)), tb.offset, common.i64(params),
    )  # fmt: skip
    return res


def qadd(
    a: Any, a_scale: float, a_zp: int, b: Any, b_scale: float, b_zp: int,
    out_scale: float, out_zp: int, activation: str | None = None,
) -> Any:  # fmt: skip
    """Quantized add with the shared-shift rule (one rounding); a and b broadcast."""
    s_out = float(np.float32(out_scale))
    ratios = [float(np.float32(a_scale)) / s_out, float(np.float32(b_scale)) / s_out]
    (m_a, m_b), shift = qarith.shared_shift_multipliers(ratios)
    qmin, qmax = qarith.relu_bounds(activation, out_scale, out_zp)
    params = [int(a_zp), int(b_zp), int(out_zp), qmin, qmax, m_a, m_b, shift]
    return _binary("qadd", a, b, params)


def qmul(
    a: Any, a_scale: float, a_zp: int, b: Any, b_scale: float, b_zp: int,
    out_scale: float, out_zp: int, activation: str | None = None,
) -> Any:  # fmt: skip
    """Quantized multiply: ``acc = (a - a_zp) * (b - b_zp)``, M from ``s_a * s_b / s_out``."""
    ratio = float(np.float32(a_scale)) * float(np.float32(b_scale)) / float(np.float32(out_scale))
    mult, shift = qarith.quantize_multiplier(ratio)
    qmin, qmax = qarith.relu_bounds(activation, out_scale, out_zp)
    return _binary("qmul", a, b, [int(a_zp), int(b_zp), int(out_zp), qmin, qmax, mult, 0, shift])


# --- qlinear / qconv2d ----------------------------------------------------------------------------


def channel_multipliers(
    in_scale: float, w_scales: Any, out_scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel ``(M[c], shift[c])`` for ``s_in * s_w[c] / s_out`` (host float64)."""
    s_in, s_out = float(np.float32(in_scale)), float(np.float32(out_scale))
    ws = np.asarray(w_scales, dtype=np.float32).reshape(-1)
    return qarith.quantize_multipliers([s_in * float(s) / s_out for s in ws])


@cuda.jit
def _qlinear_kernel(out, x, w, bias, mult, shift, dims, p):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    m_total = dims[0]
    n_total = dims[1]
    k_total = dims[2]
    if i < m_total * n_total:
        m = i // n_total
        n = i - m * n_total
        acc = int64(bias[n])
        for k in range(k_total):
            acc += (int64(x[m * k_total + k]) - p[0]) * int64(w[n * k_total + k])
        out[i] = requant(acc, mult[n], shift[n], p[1], p[2], p[3])


def _bias_and_params(
    op: str, bias: Any, channels: int, k: int, x_zp: int, out_scale: float, out_zp: int,
    activation: str | None,
) -> tuple[Any, Any]:  # fmt: skip
    b = np.zeros(channels, np.int32) if bias is None else bias
    if not hasattr(b, "copy_to_host"):
        b = np.asarray(b)
        if b.dtype != np.int32 or b.size != channels:
            raise TypeError(
                f"{op}: bias must be int32 with {channels} values, got {b.dtype} {b.shape}"
            )
        qarith.check_accumulator_bound(k, int(np.abs(b.astype(np.int64)).max(initial=0)))
    else:
        qarith.check_accumulator_bound(k, 2**31 - 1 - k * qarith.MAX_TERM_WEIGHT)
    qmin, qmax = qarith.relu_bounds(activation, out_scale, out_zp)
    return common.as_device(b), common.i64([int(x_zp), int(out_zp), qmin, qmax])


def qlinear(
    x: Any, x_scale: float, x_zp: int, weight: Any, w_scales: Any, bias: Any,
    out_scale: float, out_zp: int, activation: str | None = None,
) -> Any:  # fmt: skip
    """int8 ``x`` (..., K) times int8 ``weight`` (N, K) per-channel, int32 ``bias`` -> int8."""
    xd, wd = common.as_device(x), common.as_device(weight)
    _check_int8("qlinear", xd, wd)
    xshape, wshape = tuple(xd.shape), tuple(wd.shape)
    if len(wshape) != 2 or not xshape or xshape[-1] != wshape[1]:
        raise ValueError(f"qlinear: input {xshape} and weight {wshape} need (..., K), (N, K)")
    n, k = wshape
    rows = xd.size // k if k else 0
    mult, shift = channel_multipliers(x_scale, w_scales, out_scale)
    b, p = _bias_and_params("qlinear", bias, n, k, x_zp, out_scale, out_zp, activation)
    res = cuda.device_array(xshape[:-1] + (n,), dtype=INT8)
    _launch_1d(
        _qlinear_kernel, rows * n, common.flat(res), common.flat(xd), common.flat(wd),
        common.flat(b), cuda.to_device(mult), cuda.to_device(shift), common.i64((rows, n, k)), p,
    )  # fmt: skip
    return res


@cuda.jit
def _qconv_kernel(out, x, w, bias, mult, shift, geo, n_out, p):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n_out:
        ow = i % geo[OW]
        oh = (i // geo[OW]) % geo[OH]
        oc = (i // (geo[OW] * geo[OH])) % geo[OC]
        n = i // (geo[OW] * geo[OH] * geo[OC])
        cg = geo[C] // geo[G]
        g = oc // (geo[OC] // geo[G])
        acc = int64(bias[oc])
        for c in range(cg):
            ch = g * cg + c
            for ky in range(geo[KH]):
                ih = oh * geo[SH] - geo[PH] + ky * geo[DH]
                if ih >= 0 and ih < geo[H]:
                    for kx in range(geo[KW]):
                        iw = ow * geo[SW] - geo[PW] + kx * geo[DW]
                        if iw >= 0 and iw < geo[W]:
                            xv = int64(x[((n * geo[C] + ch) * geo[H] + ih) * geo[W] + iw]) - p[0]
                            wv = int64(w[((oc * cg + c) * geo[KH] + ky) * geo[KW] + kx])
                            acc += xv * wv
        out[i] = requant(acc, mult[oc], shift[oc], p[1], p[2], p[3])


def qconv2d(
    x: Any, x_scale: float, x_zp: int, weight: Any, w_scales: Any, bias: Any,
    out_scale: float, out_zp: int, stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1,
    activation: str | None = None,
) -> Any:  # fmt: skip
    """int8 NCHW conv2d; padding reads ``x_zp`` (contributes 0); per-channel requantization."""
    xd, wd = common.as_device(x), common.as_device(weight)
    _check_int8("qconv2d", xd, wd)
    geo = conv_geometry(xd.shape, wd.shape, stride, padding, dilation, groups, "qconv2d")
    k = geo[C] // groups * geo[KH] * geo[KW]
    mult, shift = channel_multipliers(x_scale, w_scales, out_scale)
    b, p = _bias_and_params("qconv2d", bias, geo[OC], k, x_zp, out_scale, out_zp, activation)
    res = cuda.device_array((geo[0], geo[OC], geo[OH], geo[OW]), dtype=INT8)
    _launch_1d(
        _qconv_kernel, res.size, common.flat(res), common.flat(xd), common.flat(wd),
        common.flat(b), cuda.to_device(mult), cuda.to_device(shift), common.i64(geo), res.size, p,
    )  # fmt: skip
    return res
