"""Pooling on NHWC: max, average and adaptive average, vectorized over channels.

The window rules are the interpreter's (``cuvil_ref/ops/pooling.py``): max pooling pads with
-inf (or the integer minimum, so int8 tensors pool here too) and lets NaN win; average pooling
sums the taps inside the input and divides by the window area clipped to the padded input
(``count_include_pad``), by the taps inside (otherwise) or by ``divisor_override``; adaptive
windows are ``[floor(i*H/OH), ceil((i+1)*H/OH))``. Output rows ``(n, oh)`` are the parallel items.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel, serial_kernel
from cuvil_kernels_cpu.kernels.pool_lanes import max_lanes


@serial_kernel
def _max_pixel(x, out, b, p, q, geom, fill, acc):  # type: ignore[no-untyped-def]
    """Output pixel ``(b, p, q)`` of max pooling, any dtype, taps inside ``x`` only; ``acc``
    is a scratch row of ``C`` values."""
    c = out.shape[3]
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    first = True
    for i in range(kh):
        iy = p * sh - pt + i * dh
        if iy < 0 or iy >= h:
            continue
        for j in range(kw):
            ix = q * sw - pl + j * dw
            if ix < 0 or ix >= wd:
                continue
            if first:
                for ch in range(c):
                    acc[ch] = x[b, iy, ix, ch]
                first = False
            else:
                for ch in range(c):
                    v = x[b, iy, ix, ch]
                    m = acc[ch]
                    # v wins when larger or NaN; a NaN already held stays (v > NaN fails)
                    acc[ch] = v if (v > m or v != v) else m
    if first:  # a window entirely in padding: the padding value
        for ch in range(c):
            acc[ch] = fill
    for ch in range(c):
        out[b, p, q, ch] = acc[ch]


@kernel
def max_pool(x, out, geom, fill, work):  # type: ignore[no-untyped-def]
    """``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw); ``fill`` is the padding value (-inf, or the
    integer minimum): float and integer dtypes alike."""
    n, oh, ow, c = out.shape
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        acc = np.empty(c, out.dtype)
        for q in range(ow):
            _max_pixel(x, out, item // oh, item % oh, q, geom, fill, acc)


@kernel
def max_pool_f32(x, out, geom, fill, work):  # type: ignore[no-untyped-def]
    """:func:`max_pool` for float32: a pixel whose window lies inside ``x`` on 16-channel
    lanes (:mod:`~cuvil_kernels_cpu.kernels.pool_lanes`), bit-identical; the others as there."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    x_addr, out_addr = x.ctypes.data, out.ctypes.data
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.float32)
        y0 = p * sh - pt
        rows_in = y0 >= 0 and y0 + (kh - 1) * dh < h
        for q in range(ow):
            x0 = q * sw - pl
            if not (rows_in and x0 >= 0 and x0 + (kw - 1) * dw < wd):
                _max_pixel(x, out, b, p, q, geom, fill, acc)
                continue
            src = x_addr + ((b * h + y0) * wd + x0) * c * 4
            dst = out_addr + ((b * oh + p) * ow + q) * c * 4
            for ch in range(0, c, 16):
                max_lanes(src + ch * 4, dh * wd * c, dw * c, kh, kw, dst + ch * 4,
                          min(16, c - ch))  # fmt: skip


@kernel
def avg_pool(x, out, geom, pads_br, count_include_pad, divisor, work):  # type: ignore[no-untyped-def]
    """Average pooling, float32; ``pads_br`` = (bottom, right); ``divisor`` > 0 overrides."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl = geom[4], geom[5]
    pb, pr = pads_br[0], pads_br[1]
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.float32)
        y0 = p * sh - pt
        y1 = min(y0 + kh, h + pb)
        iy0, iy1 = max(y0, 0), min(y1, h)
        for q in range(ow):
            x0 = q * sw - pl
            x1 = min(x0 + kw, wd + pr)
            ix0, ix1 = max(x0, 0), min(x1, wd)
            for ch in range(c):
                acc[ch] = 0.0
            for iy in range(iy0, iy1):
                for ix in range(ix0, ix1):
                    for ch in range(c):
                        acc[ch] += x[b, iy, ix, ch]
            if divisor > 0:
                d = np.float32(divisor)
            elif count_include_pad:
                d = np.float32((y1 - y0) * (x1 - x0))
            else:
                d = np.float32((iy1 - iy0) * (ix1 - ix0))
            for ch in range(c):
                out[b, p, q, ch] = acc[ch] / d


@kernel
def adaptive_avg_pool(x, out, work):  # type: ignore[no-untyped-def]
    """Adaptive average pooling, float32 (PyTorch's overlapping windows)."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.float32)
        y0 = (p * h) // oh
        y1 = -((-(p + 1) * h) // oh)
        for q in range(ow):
            x0 = (q * wd) // ow
            x1 = -((-(q + 1) * wd) // ow)
            for ch in range(c):
                acc[ch] = 0.0
            for iy in range(y0, y1):
                for ix in range(x0, x1):
                    for ch in range(c):
                        acc[ch] += x[b, iy, ix, ch]
            area = np.float32((y1 - y0) * (x1 - x0))
            for ch in range(c):
                out[b, p, q, ch] = acc[ch] / area
