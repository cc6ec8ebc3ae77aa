"""Direct depthwise convolution on NHWC float32, vectorized over channels.

A depthwise layer does ``KH * KW`` multiply-adds per output: too little work per byte for a
GEMM. Here each output pixel keeps a row of ``C`` accumulators (one per channel, contiguous,
so LLVM vectorizes the channel loop), adds the taps that fall inside the image (padding
contributes nothing: taps outside are skipped, not multiplied by zero), then applies the
epilogue -- bias, residual, clamp or activation, residual -- and stores the row once. Output
rows ``(n, oh)`` are the parallel items.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel


def pack_depthwise(weight: np.ndarray) -> np.ndarray:
    """OIHW weight ``[C, 1, KH, KW]`` -> ``[KH, KW, C]`` (channels contiguous)."""
    return np.ascontiguousarray(np.asarray(weight, np.float32)[:, 0].transpose(1, 2, 0))


@kernel
def depthwise(x, w, bias, res, out, geom, lo, hi, act, res_mode, work):  # type: ignore[no-untyped-def]
    """out[n, p, q, c] = epilogue(bias[c] + sum_{i,j} x[n, p*sh - pt + i*dh, q*sw - pl + j*dw, c]
    * w[i, j, c]) over the taps inside x; ``geom`` = (KH, KW, sh, sw, pt, pl, dh, dw)."""
    n, oh, ow, c = out.shape
    h, wd = x.shape[1], x.shape[2]
    kh, kw, sh, sw = geom[0], geom[1], geom[2], geom[3]
    pt, pl, dh, dw = geom[4], geom[5], geom[6], geom[7]
    n_items = n * oh
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        b = item // oh
        p = item % oh
        acc = np.empty(c, np.float32)
        for q in range(ow):
            for ch in range(c):
                acc[ch] = 0.0
            for i in range(kh):
                iy = p * sh - pt + i * dh
                if iy < 0 or iy >= h:
                    continue
                for j in range(kw):
                    ix = q * sw - pl + j * dw
                    if ix < 0 or ix >= wd:
                        continue
                    for ch in range(c):
                        acc[ch] += x[b, iy, ix, ch] * w[i, j, ch]
            dst = out[b, p, q]
            r = res[b, p, q] if res_mode != 0 else dst
            mathf.epilogue_row(acc, bias, r, dst, lo, hi, act, res_mode)
