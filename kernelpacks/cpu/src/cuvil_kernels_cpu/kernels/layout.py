"""NCHW <-> NHWC transposing copies, one image row per item.

numpy's strided copy (``np.copyto(dst, src.transpose(...))``) walks the small channel axis
innermost; for a network input (C = 3) that was measured at 0.18-0.2 ms for one 224x224 image,
as long as a whole MobileNetV2 layer. Here an item is one row ``(n, y)``: the ``C`` source rows
are read contiguously and the row is written with stride ``C`` (it stays in L1), and the rows
are shared among the team's threads. Exact (a copy).

Three channels (an RGB input) are stored by one loop writing all three of a pixel's values,
which LLVM vectorizes as an interleaving store; a loop per channel, storing with stride 3, it
did not: 0.110 against 0.038 ms for one padded 224x224 image, 0.112 against 0.036 unpadded
(one thread, AMD EPYC Zen 2, 2026-12-07).
"""

from __future__ import annotations

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel, serial_kernel


@serial_kernel
def _row_to_pixels(x, b, y, row):  # type: ignore[no-untyped-def]
    """``row[i * C + ch] = x[b, ch, y, i]`` for the ``len(row) // C`` pixels of ``row``."""
    c = x.shape[1]
    n = len(row) // c
    if c == 3:
        s0, s1, s2 = x[b, 0, y], x[b, 1, y], x[b, 2, y]
        for i in range(n):
            row[3 * i] = s0[i]
            row[3 * i + 1] = s1[i]
            row[3 * i + 2] = s2[i]
        return
    for ch in range(c):
        src = x[b, ch, y]
        for i in range(n):
            row[i * c + ch] = src[i]


@kernel
def nchw_to_nhwc(x, out, work):  # type: ignore[no-untyped-def]
    """out[n, y, x, c] = x[n, c, y, x]."""
    n, c, h, w = x.shape
    n_items = n * h
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // h
        y = item % h
        _row_to_pixels(x, b, y, out[b, y].reshape(w * c))


@kernel
def nhwc_to_nchw(x, out, work):  # type: ignore[no-untyped-def]
    """out[n, c, y, x] = x[n, y, x, c]."""
    n, h, w, c = x.shape
    n_items = n * h
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // h
        y = item % h
        row = x[b, y].reshape(w * c)
        for ch in range(c):
            dst = out[b, ch, y]
            for i in range(w):
                dst[i] = row[i * c + ch]


@kernel
def pad_from_nchw(x, out, pt, pl, work):  # type: ignore[no-untyped-def]
    """out = the NCHW ``x`` stored NHWC and zero-padded by ``pt`` rows on top and ``pl`` columns
    on the left (up to out's size at the bottom and right): the layout step and the padding of
    a direct convolution's input in one pass (:func:`nchw_to_nhwc` then
    :func:`cuvil_kernels_cpu.kernels.gather.pad_nhwc`). Rows (n, y) of out are the items."""
    n, c, h, w = x.shape
    hp, wp = out.shape[1], out.shape[2]
    n_items = n * hp
    left = min(pl, wp)
    inner = max(0, min(w, wp - pl))
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // hp
        y = item % hp
        iy = y - pt
        row = out[b, y].reshape(wp * c)
        if 0 <= iy < h:
            for i in range(left * c):
                row[i] = 0.0
            _row_to_pixels(x, b, iy, row[left * c : (left + inner) * c])
            for i in range((left + inner) * c, wp * c):
                row[i] = 0.0
        else:
            for i in range(wp * c):
                row[i] = 0.0
