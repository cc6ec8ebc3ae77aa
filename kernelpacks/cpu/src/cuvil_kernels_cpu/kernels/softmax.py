"""softmax and log_softmax, and attention scores scaled and masked inside the same pass.

Tensors arrive as ``[outer, L, inner]`` views (the reduced axis in the middle, ``inner = 1`` for
the last axis, the usual case); rows are the parallel items. Sums use reassociated float32
(vectorized) arithmetic -- inside the conformance bound for reductions. NaN and infinities
keep the interpreter's meaning: a NaN in a row makes the row NaN, an all ``-inf`` row gives NaN.

**The row maximum** is taken over integer keys: a float's bits ``i`` map to
``i ^ ((i >> 31) & 0x7fffffff)``, whose signed order is the floats' order, with NaNs above
``+inf`` (sign clear) or below ``-inf`` (sign set). An integer max/min reduction vectorizes
where a float one does not (without ``nnan`` LLVM keeps ``max`` scalar): the max pass over
BERT's scores went from 132 to under 20 us on one thread.

**Attention scores** (:func:`softmax_scores`): a captured ``scaled_dot_product_attention``
is ``matmul -> mul (or div) by a scalar -> where(mask, scores, fill) -> softmax``. The lowering
(:mod:`cuvil_kernels_cpu.lowering.attention`) folds the scale and the mask into the softmax
step: each row is first written as ``where(mask, x * scale, fill)`` with the very operations
the pointwise steps would do (no fastmath there, so the values are bit-identical), then
normalized in place -- one pass over the scores instead of three.
"""

from __future__ import annotations

import math

import numpy as np

from cuvil_kernels_cpu.kernels import mathf
from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import reduction_kernel, serial_kernel
from cuvil_kernels_cpu.kernels.vectors import wide_vectors

#: keys of +inf and -inf (see the module docstring)
_KEY_POS_INF = np.int32(0x7F800000)
_KEY_NEG_INF = np.int32(-0x7F800001)
#: scale operations of :func:`softmax_scores`
SCALE_NONE, SCALE_MUL, SCALE_DIV = 0, 1, 2


#: Elements per work item of the row kernels (rows are taken in blocks: one atomic grab per
#: row was measured at a quarter of the kernel's time on BERT's 128-wide rows).
BLOCK = 4096


@reduction_kernel
def softmax(x, out, log, work):  # type: ignore[no-untyped-def]
    """out = softmax(x) (or log_softmax when ``log``) along axis 1 of ``[outer, L, inner]``
    with ``inner > 1`` (a middle axis; the last axis goes through :func:`softmax_scores`)."""
    outer, n, inner = x.shape
    n_items = outer * inner
    while True:
        item = grab(work, n_items)
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
def softmax_scores(x, mask, fill, out, scale, scale_op, keep, has_mask, log, work):  # type: ignore[no-untyped-def]
    """Rows of ``out`` = softmax (log_softmax when ``log``) of
    ``where(mask == keep, x (scale_op) scale, fill)`` over ``[R, L]``, the last axis; ``mask``
    is ``[P, L]`` (bool), row ``r`` using mask row ``r % P``; ``fill`` is one float32 element;
    ``scale_op`` one of SCALE_NONE, SCALE_MUL, SCALE_DIV. Plain softmax: no scale, no mask."""
    wide_vectors()
    rows, n = x.shape
    period = mask.shape[0]
    f = fill[0]
    per = max(1, BLOCK // n)
    n_items = (rows + per - 1) // per
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        for r in range(item * per, min(rows, item * per + per)):
            # the scores, written where the probabilities go: one IEEE operation each, as the
            # pointwise steps (exact_mul/exact_div are never contracted into an FMA)
            xr = x[r]
            mr = mask[r % period]
            orow = out[r]
            for j in range(n):
                v = xr[j]
                if scale_op == SCALE_MUL:
                    v = mathf.exact_mul(v, scale)
                elif scale_op == SCALE_DIV:
                    v = mathf.exact_div(v, scale)
                if has_mask and mr[j] != keep:
                    v = f
                orow[j] = v
            _softmax_row(orow, log)


@serial_kernel
def _key(i):  # type: ignore[no-untyped-def]
    return np.int32(i ^ ((i >> 31) & 0x7FFFFFFF))  # an involution: it maps keys back too


@reduction_kernel
def _softmax_row(row, log):  # type: ignore[no-untyped-def]
    """One contiguous row, in place (a single array, so LLVM vectorizes without alias checks)."""
    wide_vectors()
    n = row.size
    kmax = _key(mathf.f32_as_i32(row[0]))
    kmin = kmax
    for j in range(n):
        k = _key(mathf.f32_as_i32(row[j]))
        kmax = max(kmax, k)
        kmin = min(kmin, k)
    if kmax > _KEY_POS_INF or kmin < _KEY_NEG_INF:
        m = np.float32(np.nan)
    else:
        m = mathf.i32_as_f32(_key(kmax))
    total = np.float32(0.0)
    if log:
        for j in range(n):
            total += mathf.exp_f32(row[j] - m)
        lt = np.float32(math.log(total))
        for j in range(n):
            row[j] = (row[j] - m) - lt
    else:
        for j in range(n):
            e = mathf.exp_f32(row[j] - m)
            total += e
            row[j] = e
        for j in range(n):
            row[j] = row[j] / total
