"""layer_norm over rows, and the per-channel affine of batch_norm (softmax:
:mod:`cuvil_kernels_cpu.kernels.softmax`).

layer_norm's rows are the parallel items; its sums use reassociated float32 (vectorized)
arithmetic, inside the conformance bound for reductions. NaN and infinities keep the
interpreter's meaning.
"""

from __future__ import annotations

import math

import numpy as np

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel, reduction_kernel


@reduction_kernel
def layer_norm(x, weight, bias, out, eps, has_weight, has_bias, work):  # type: ignore[no-untyped-def]
    """out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias over rows of ``[R, L]``."""
    rows, n = x.shape
    n_items = rows
    while True:
        r = grab(work, n_items)
        if r >= n_items:
            break
        s = np.float32(0.0)
        for j in range(n):
            s += x[r, j]
        mean = s / np.float32(n)
        q = np.float32(0.0)
        for j in range(n):
            d = x[r, j] - mean
            q += d * d
        inv = np.float32(1.0) / np.float32(math.sqrt(q / np.float32(n) + eps))
        for j in range(n):
            v = (x[r, j] - mean) * inv
            if has_weight:
                v = v * weight[j]
            if has_bias:
                v = v + bias[j]
            out[r, j] = v


@kernel
def batch_norm(x, table, out, has_weight, has_bias, work):  # type: ignore[no-untyped-def]
    """out[r, c] = ((x[r, c] - mean[c]) * inv_std[c]) * weight[c] + bias[c] over ``[R, C]``
    (channels last); ``table`` rows are mean, inv_std, weight, bias -- the interpreter's order
    of float32 operations, so the result is bit-exact."""
    rows, c = x.shape
    n_items = rows
    while True:
        r = grab(work, n_items)
        if r >= n_items:
            break
        for j in range(c):
            v = (x[r, j] - table[0, j]) * table[1, j]
            if has_weight:
                v = v * table[2, j]
            if has_bias:
                v = v + table[3, j]
            out[r, j] = v
