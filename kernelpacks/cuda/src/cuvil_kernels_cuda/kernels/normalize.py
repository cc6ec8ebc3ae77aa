"""Row kernels: softmax, log_softmax, layer_norm; and batch_norm in inference form.

softmax and layer_norm use one block per row: threads stride over the row and combine partials in
shared memory (max, then sum), all in float32. Rows are described by strides, so softmax over a
middle axis reads the input in place. batch_norm (inference) is elementwise per channel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.indexing import strided_pos

_INF = float("inf")


@cuda.jit(device=True)
def _block_max(buf, t, block):  # noqa: ANN001, ANN202
    cuda.syncthreads()
    half = block // 2
    while half > 0:
        if t < half:
            a = buf[t]
            b = buf[t + half]
            if b != b or b > a:
                buf[t] = b
        cuda.syncthreads()
        half //= 2
    result = buf[0]
    cuda.syncthreads()
    return result


@cuda.jit(device=True)
def _block_sum(buf, t, block):  # noqa: ANN001, ANN202
    cuda.syncthreads()
    half = block // 2
    while half > 0:
        if t < half:
            buf[t] += buf[t + half]
        cuda.syncthreads()
        half //= 2
    result = buf[0]
    cuda.syncthreads()
    return result


def _build_softmax(log: bool, block: int) -> Any:
    @cuda.jit
    def softmax_kernel(y, x, oshape, xstr, ystr, xo, xa, ya, n):  # noqa: ANN001, ANN202
        buf = cuda.shared.array(block, float32)
        o = cuda.blockIdx.x
        t = cuda.threadIdx.x
        xb = strided_pos(o, oshape, xstr, xo)
        yb = strided_pos(o, oshape, ystr, 0)
        m = float32(-_INF)
        j = t
        while j < n:
            v = float32(x[xb + j * xa])
            if v != v or v > m:
                m = v
            j += block
        buf[t] = m
        m = _block_max(buf, t, block)
        s = float32(0.0)
        j = t
        while j < n:
            s += float32(math.exp(float32(x[xb + j * xa]) - m))
            j += block
        buf[t] = s
        s = _block_sum(buf, t, block)
        j = t
        while j < n:
            d = float32(x[xb + j * xa]) - m
            if log:
                y[yb + j * ya] = d - float32(math.log(s))
            else:
                y[yb + j * ya] = float32(math.exp(d)) / s
            j += block

    return softmax_kernel


def _softmax(x: Any, axis: int, log: bool) -> Any:
    op = "log_softmax" if log else "softmax"
    t = common.strided(x, op)
    dtype = common.check_float(op, t.dtype)
    nd = len(t.shape)
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"{op}: axis {axis} out of range for shape {t.shape}")
    res = cuda.device_array(t.shape, dtype=dtype)
    if nd == 0 or t.size == 0:
        return _scalar_softmax(res, log) if nd == 0 else res
    axis %= nd
    ystrides = common.c_strides(t.shape)
    others = [d for d in range(nd) if d != axis]
    n_rows = int(np.prod([t.shape[d] for d in others], dtype=np.int64))
    block = common.threads_1d()
    kernel = common.cached(("softmax", log, block), lambda: _build_softmax(log, block))
    common.launch(kernel, n_rows, block,
        common.flat(res), t.data,
        common.i64([t.shape[d] for d in others] or [1]),
        common.i64([t.strides[d] for d in others] or [0]),
        common.i64([ystrides[d] for d in others] or [0]),
        t.offset, t.strides[axis], ystrides[axis], t.shape[axis],
    )  # fmt: skip
    return res


def _scalar_softmax(res: Any, log: bool) -> Any:
    res.copy_to_device(np.full((), 0.0 if log else 1.0, dtype=res.dtype))
    return res


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``; a NaN makes its row NaN."""
    return _softmax(x, axis, log=False)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``(x - max) - log(sum(exp(x - max)))`` along ``axis``."""
    return _softmax(x, axis, log=True)


def _build_layer_norm(has_weight: bool, has_bias: bool, block: int) -> Any:
    @cuda.jit
    def layer_norm_kernel(y, x, w, b, kshape, kstr, rshape, rstr, xo, n, eps):  # noqa: ANN001, ANN202
        buf = cuda.shared.array(block, float32)
        o = cuda.blockIdx.x
        t = cuda.threadIdx.x
        xb = strided_pos(o, kshape, kstr, xo)
        s = float32(0.0)
        j = t
        while j < n:
            s += float32(x[strided_pos(j, rshape, rstr, xb)])
            j += block
        buf[t] = s
        mean = _block_sum(buf, t, block) / float32(n)
        s = float32(0.0)
        j = t
        while j < n:
            d = float32(x[strided_pos(j, rshape, rstr, xb)]) - mean
            s += d * d
            j += block
        buf[t] = s
        var = _block_sum(buf, t, block) / float32(n)
        inv = float32(1.0) / float32(math.sqrt(var + eps))
        j = t
        while j < n:
            v = (float32(x[strided_pos(j, rshape, rstr, xb)]) - mean) * inv
            if has_weight:
                v = v * float32(w[j])
            if has_bias:
                v = v + float32(b[j])
            y[o * n + j] = v
            j += block

    return layer_norm_kernel


def layer_norm(
    x: Any,
    normalized_shape: Sequence[int],
    weight: Any = None,
    bias: Any = None,
    eps: float = 1e-5,
) -> Any:
    """Normalize over the last ``len(normalized_shape)`` axes (biased variance), then affine."""
    t = common.strided(x, "layer_norm")
    k = len(normalized_shape)
    if tuple(t.shape[len(t.shape) - k :]) != tuple(normalized_shape) or k == 0:
        raise ValueError(
            f"layer_norm: normalized_shape {tuple(normalized_shape)} must be the trailing axes of "
            f"the input shape {t.shape}"
        )
    dtype = common.check_float("layer_norm", t.dtype)
    n = int(np.prod(normalized_shape, dtype=np.int64))
    res = cuda.device_array(t.shape, dtype=dtype)
    nd = len(t.shape)
    n_rows = int(np.prod(t.shape[: nd - k], dtype=np.int64))
    if n_rows == 0 or n == 0:
        return res
    w = common.as_device(np.zeros(1, np.float32) if weight is None else weight)
    b = common.as_device(np.zeros(1, np.float32) if bias is None else bias)
    block = common.threads_1d()
    key = ("layer_norm", weight is not None, bias is not None, block)
    kernel = common.cached(
        key, lambda: _build_layer_norm(weight is not None, bias is not None, block)
    )
    common.launch(kernel, n_rows, block,
        common.flat(res), t.data, common.flat(w), common.flat(b),
        common.i64(t.shape[: nd - k] or [1]), common.i64(t.strides[: nd - k] or [0]),
        common.i64(t.shape[nd - k :]), common.i64(t.strides[nd - k :]),
        t.offset, n, np.float32(eps),
    )  # fmt: skip
    return res


@cuda.jit
def _batch_norm_kernel(y, x, shape, xs, xo, n, channels, inner, mean, var, w, b, eps):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        c = (i // inner) % channels
        inv = float32(1.0) / float32(math.sqrt(float32(var[c]) + eps))
        v = (float32(x[strided_pos(i, shape, xs, xo)]) - float32(mean[c])) * inv
        y[i] = v * float32(w[c]) + float32(b[c])


def batch_norm(
    x: Any,
    running_mean: Any,
    running_var: Any,
    weight: Any = None,
    bias: Any = None,
    eps: float = 1e-5,
) -> Any:
    """Inference batch norm over axis 1: ``(x - mean) / sqrt(var + eps) * weight + bias``."""
    t = common.strided(x, "batch_norm")
    dtype = common.check_float("batch_norm", t.dtype)
    if len(t.shape) < 2:
        raise ValueError(f"batch_norm: input must be (N, C, ...), got shape {t.shape}")
    channels = t.shape[1]
    inner = int(np.prod(t.shape[2:], dtype=np.int64))
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    params = [
        common.as_device(p if p is not None else d)
        for p, d in ((running_mean, None), (running_var, None), (weight, ones), (bias, zeros))
    ]
    for name, p in zip(("running_mean", "running_var", "weight", "bias"), params, strict=True):
        if p.size != channels:
            raise ValueError(f"batch_norm: {name} has {p.size} values, expected {channels}")
    res = cuda.device_array(t.shape, dtype=dtype)
    n = t.size
    if n:
        tpb = common.threads_1d()
        common.launch(_batch_norm_kernel, common.blocks_for(n, tpb), tpb,
            common.flat(res), t.data, common.i64(t.shape), common.i64(t.strides), t.offset, n,
            channels, inner, *(common.flat(p) for p in params), np.float32(eps),
        )  # fmt: skip
    return res
