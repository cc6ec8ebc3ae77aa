"""Elementwise int8 kernels of docs/semantics.md: quantize, dequantize, requantize, qadd, qmul,
and the int8 average pools -- bit-exact by construction (the spec's formulas, in the spec's
integer and float32 widths).

``quantize`` is one float32 division (never a reciprocal) rounded half-to-even by ``np.rint``,
NaN to the zero point, infinities saturated; ``dequantize`` is one float32 multiply of the
exact difference ``q - zp``. Flush-to-zero is never enabled, so subnormals behave as IEEE says.
Arrays arrive flattened (same-shape operands): the item loop is one long vectorized loop.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel

_CHUNK = 1 << 14


@kernel
def quantize(x, out, scale, zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """out = clamp(rint(x / scale) + zp, qmin, qmax) as int8 (NaN -> zp)."""
    n = x.size
    lo = np.float32(qmin - zp)
    hi = np.float32(qmax - zp)
    n_items = (n + _CHUNK - 1) // _CHUNK
    while True:
        c = grab(work, n_items)
        if c >= n_items:
            break
        lo_i = c * _CHUNK
        hi_i = min(n, lo_i + _CHUNK)
        out_v = out[lo_i:hi_i]
        x_v = x[lo_i:hi_i]
        for i in range(hi_i - lo_i):
            t = np.rint(np.float32(x_v[i]) / scale)
            t = lo if t < lo else t
            t = hi if t > hi else t
            t = np.float32(0.0) if t != t else t
            out_v[i] = np.int8(np.int32(t) + zp)


@kernel
def dequantize(q, out, scale, zp, work):  # type: ignore[no-untyped-def]
    """out = f32(q - zp) * scale (one float32 multiply)."""
    n = q.size
    n_items = (n + _CHUNK - 1) // _CHUNK
    while True:
        c = grab(work, n_items)
        if c >= n_items:
            break
        lo_i = c * _CHUNK
        hi_i = min(n, lo_i + _CHUNK)
        out_v = out[lo_i:hi_i]
        q_v = q[lo_i:hi_i]
        for i in range(hi_i - lo_i):
            out_v[i] = np.float32(np.int32(q_v[i]) - zp) * scale


@kernel
def requantize(x, out, x_zp, mult, shift, out_zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """out = clamp(out_zp + rescale(x - x_zp, M, shift), qmin, qmax), per tensor."""
    n = x.size
    rounding = np.int64(1) << (shift - 1)
    n_items = (n + _CHUNK - 1) // _CHUNK
    while True:
        c = grab(work, n_items)
        if c >= n_items:
            break
        lo_i = c * _CHUNK
        hi_i = min(n, lo_i + _CHUNK)
        out_v = out[lo_i:hi_i]
        x_v = x[lo_i:hi_i]
        for i in range(hi_i - lo_i):
            acc = np.int64(x_v[i]) - x_zp
            v = out_zp + ((acc * mult + rounding) >> shift)
            out_v[i] = np.int8(min(max(v, qmin), qmax))


@kernel
def qadd(a, b, out, a_zp, b_zp, m_a, m_b, shift, out_zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """out = clamp(out_zp + (((a - a_zp) M_a + (b - b_zp) M_b + 2**(shift-1)) >> shift))."""
    n = a.size
    rounding = np.int64(1) << (shift - 1)
    n_items = (n + _CHUNK - 1) // _CHUNK
    while True:
        c = grab(work, n_items)
        if c >= n_items:
            break
        lo_i = c * _CHUNK
        hi_i = min(n, lo_i + _CHUNK)
        a_v = a[lo_i:hi_i]
        b_v = b[lo_i:hi_i]
        out_v = out[lo_i:hi_i]
        for i in range(hi_i - lo_i):
            acc = (np.int64(a_v[i]) - a_zp) * m_a + (np.int64(b_v[i]) - b_zp) * m_b
            v = out_zp + ((acc + rounding) >> shift)
            out_v[i] = np.int8(min(max(v, qmin), qmax))


@kernel
def qmul(a, b, out, a_zp, b_zp, mult, shift, out_zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """out = clamp(out_zp + rescale((a - a_zp)(b - b_zp), M, shift), qmin, qmax)."""
    n = a.size
    rounding = np.int64(1) << (shift - 1)
    n_items = (n + _CHUNK - 1) // _CHUNK
    while True:
        c = grab(work, n_items)
        if c >= n_items:
            break
        lo_i = c * _CHUNK
        hi_i = min(n, lo_i + _CHUNK)
        a_v = a[lo_i:hi_i]
        b_v = b[lo_i:hi_i]
        out_v = out[lo_i:hi_i]
        for i in range(hi_i - lo_i):
            acc = (np.int64(a_v[i]) - a_zp) * (np.int64(b_v[i]) - b_zp)
            v = out_zp + ((acc * mult + rounding) >> shift)
            out_v[i] = np.int8(min(max(v, qmin), qmax))


@kernel
def qavg_pool(x, rows, cols, mult, shift, out, x_zp, out_zp, qmin, qmax, work):  # type: ignore[no-untyped-def]
    """int8 average pool over NHWC: ``rows``/``cols`` are (start, end, count) per output index;
    acc = sum over the window of (x - x_zp), n = count_r * count_c, then the requantization
    with table entry ``n - 1``."""
    n, oh, ow, c = out.shape
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.int64)
        for q in range(ow):
            for ch in range(c):
                acc[ch] = 0
            for iy in range(rows[0, p], rows[1, p]):
                for ix in range(cols[0, q], cols[1, q]):
                    for ch in range(c):
                        acc[ch] += np.int64(x[b, iy, ix, ch]) - x_zp
            cnt = rows[2, p] * cols[2, q]
            mm = mult[cnt - 1]
            s = shift[cnt - 1]
            rounding = np.int64(1) << (s - 1)
            for ch in range(c):
                v = out_zp + ((acc[ch] * mm + rounding) >> s)
                out[b, p, q, ch] = np.int8(min(max(v, qmin), qmax))
