"""Row-wise kernels for transformers: softmax, log_softmax, layer_norm; per-channel affine.

Tensors arrive as ``[outer, L, inner]`` views (the reduced axis in the middle, ``inner = 1`` for
the last axis, the usual case), rows are the parallel items, and sums use reassociated float32
(vectorized) arithmetic -- inside the conformance bound for reductions; NaN and infinities keep
the interpreter's meaning (a NaN in a row makes the row NaN, an all ``-inf`` row gives NaN).
"""

from __future__ import annotations

import math

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel, reduction_kernel


@reduction_kernel
def softmax(x, out, log, work):  # type: ignore[no-untyped-def]
    """out = softmax(x) (or log_softmax when ``log``) along axis 1 of ``[outer, L, inner]``."""
    outer, n, inner = x.shape
    if inner == 1:
        _softmax_rows(x.reshape(outer, n), out.reshape(outer, n), log, work)
        return
    n_items = outer * inner
    while True:
        item = grab(work)
        if item >= n_items:
            break
        o = item // inner
        i = item % inner
        m = x[o, 0, i]
        for j in range(1, n):
            v = x[o, j, i]
            m = v if (v > m or v != v) else m
        total = np.float32(0.0)
        for j in range(n):
            e = mathf.exp_f32(x[o, j, i] - m)
            total += e
            if not log:
                out[o, j, i] = e
        if log:
            lt = np.float32(math.log(total))
            for j in range(n):
                out[o, j, i] = (x[o, j, i] - m) - lt
        else:
            inv = total
            for j in range(n):
                out[o, j, i] = out[o, j, i] / inv


@reduction_kernel
def _softmax_rows(x, out, log, work):  # type: ignore[no-untyped-def]
    """:func:`softmax` over the last axis: contiguous rows, so every loop vectorizes (the
    strided loop above was measured at about 4 ns per element on BERT's attention scores)."""
    rows, n = x.shape
    while True:
        r = grab(work)
        if r >= rows:
            break
        xr = x[r]
        orow = out[r]
        m = xr[0]
        nan = False
        for j in range(n):
            v = xr[j]
            nan |= v != v
            m = max(m, v)
        if nan:
            m = np.float32(np.nan)
        total = np.float32(0.0)
        for j in range(n):
            e = mathf.exp_f32(xr[j] - m)
            total += e
            orow[j] = e
        if log:
            lt = np.float32(math.log(total))
            for j in range(n):
                orow[j] = (xr[j] - m) - lt
        else:
            for j in range(n):
                orow[j] = orow[j] / total


@reduction_kernel
def layer_norm(x, weight, bias, out, eps, has_weight, has_bias, work):  # type: ignore[no-untyped-def]
    """out[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias over rows of ``[R, L]``."""
    rows, n = x.shape
    n_items = rows
    while True:
        r = grab(work)
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
        r = grab(work)
        if r >= n_items:
            break
        for j in range(c):
            v = (x[r, j] - table[0, j]) * table[1, j]
            if has_weight:
                v = v * table[2, j]
            if has_bias:
                v = v + table[3, j]
            out[r, j] = v
