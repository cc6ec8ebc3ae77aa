"""The GEMM's input rows: zero padding of an NHWC input and im2col gathers.

:func:`pad_nhwc` pads an input for the direct convolution; :func:`gather_rows` writes the
im2col rows of a range of output pixels (one group): ``gemm.conv_gemm`` calls it per item,
:func:`im2col` over a whole layer to gather its rows once.
"""

from __future__ import annotations

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel, serial_kernel


@kernel
def pad_nhwc(x, out, pt, pl, work):  # type: ignore[no-untyped-def]
    """out = x zero-padded by ``pt`` rows on top and ``pl`` columns on the left (and up to out's
    size at the bottom and right), NHWC; rows (n, y) of out are the items. A row is three flat
    runs (left zeros, the input row, right zeros), so the copies vectorize for any C."""
    n, hp, wp, c = out.shape
    h, w = x.shape[1], x.shape[2]
    n_items = n * hp
    left = min(pl, wp) * c
    inner = max(0, min(w, wp - pl)) * c
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // hp
        y = item % hp
        iy = y - pt
        row = out[b, y].reshape(wp * c)
        if 0 <= iy < h:
            src = x[b, iy].reshape(w * c)
            for i in range(left):
                row[i] = 0.0
            dst = row[left : left + inner]
            for i in range(inner):
                dst[i] = src[i]
            for i in range(left + inner, wp * c):
                row[i] = 0.0
        else:
            for i in range(wp * c):
                row[i] = 0.0


@kernel
def im2col(x, cols, geom, oh, ow, work):  # type: ignore[no-untyped-def]
    """cols[M, K] = the im2col rows of x (one group), in blocks of 64 rows (the items)."""
    m = cols.shape[0]
    n_items = (m + 63) // 64
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        r0 = item * 64
        gather_rows(x, cols[r0 : min(m, r0 + 64)], r0, min(64, m - r0), 0, geom, oh, ow)


@serial_kernel
def gather_rows(x, a, r0, rows, g, geom, oh, ow):  # type: ignore[no-untyped-def]
    """im2col rows ``r0 .. r0 + rows`` of group ``g`` into ``a`` (zeros for padding; rows
    past ``rows`` zeroed). A kernel row whose taps all lie inside ``x`` is one contiguous copy
    of ``KW * Cg`` values when dilation is 1 and there is one group (flat indices throughout,
    so the copies vectorize)."""
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    h, w, ctot = x.shape[1], x.shape[2], x.shape[3]
    kk = a.shape[1]
    cg = kk // (kh * kw)
    c0 = g * cg
    run = kw * cg
    contiguous = dw == 1 and cg == ctot
    xf = x.reshape(x.size)
    af = a.reshape(a.size)
    for r in range(rows):
        q = r0 + r
        n = q // (oh * ow)
        p = q % (oh * ow)
        y0 = (p // ow) * sh - pt
        x0 = (p % ow) * sw - pl
        inside_x = x0 >= 0 and x0 + (kw - 1) * dw < w
        for i in range(kh):
            iy = y0 + i * dh
            dst = r * kk + i * run
            drow = af[dst : dst + run]  # views indexed from 0 vectorize (see mathf.activate_block)
            if iy < 0 or iy >= h:
                for c in range(run):
                    drow[c] = 0.0
            elif inside_x and contiguous:
                src = ((n * h + iy) * w + x0) * ctot
                srow = xf[src : src + run]
                for c in range(run):
                    drow[c] = srow[c]
            else:
                for j in range(kw):
                    ix = x0 + j * dw
                    d = drow[j * cg : (j + 1) * cg]
                    if 0 <= ix < w:
                        src = ((n * h + iy) * w + ix) * ctot + c0
                        srow = xf[src : src + cg]
                        for c in range(cg):
                            d[c] = srow[c]
                    else:
                        for c in range(cg):
                            d[c] = 0.0
    tail = af[rows * kk :]
    for c in range(tail.size):
        tail[c] = 0.0
