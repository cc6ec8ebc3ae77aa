"""Data movement: one strided-copy kernel serves permute/transpose, slice, concat and pad; gather
and index_select have their own kernel. Every dtype is supported (values are copied, not cast).

A view (permutation, steps, an offset into a larger output) is only a different (shape, strides,
offset) triple on either side of the copy, so no case needs its own kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.indexing import strided_pos


@cuda.jit
def _copy_kernel(dst, shape, dstr, doff, src, sstr, soff, n):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        dst[strided_pos(i, shape, dstr, doff)] = src[strided_pos(i, shape, sstr, soff)]


@cuda.jit
def _fill_kernel(dst, value, n):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        dst[i] = value


def copy_strided(
    dst: Any, shape: Sequence[int], dst_strides: Sequence[int], dst_offset: int,
    src: common.Strided, src_strides: Sequence[int], src_offset: int,
) -> None:  # fmt: skip
    """Copy ``shape`` elements from ``src`` (strides/offset) into flat ``dst`` (strides/offset)."""
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return
    shape = tuple(shape) or (1,)
    tpb = common.threads_1d()
    common.launch(_copy_kernel, common.blocks_for(n, tpb), tpb,
        dst, common.i64(shape), common.i64(tuple(dst_strides) or (0,)), dst_offset,
        src.data, common.i64(tuple(src_strides) or (0,)), src_offset, n,
    )  # fmt: skip


def _contiguous_from(
    t: common.Strided, shape: Sequence[int], strides: Sequence[int], off: int
) -> Any:
    res = cuda.device_array(tuple(shape), dtype=t.dtype)
    copy_strided(common.flat(res), shape, common.c_strides(shape), 0, t, strides, off)
    return res


def permute(x: Any, perm: Sequence[int]) -> Any:
    """``x.permute(perm)`` materialized contiguously."""
    t = common.strided(x, "permute")
    nd = len(t.shape)
    perm = [p % nd for p in perm] if nd else []
    if not perm:  # a 0-d tensor's permute (); the pack may hold it as one element
        perm = list(range(nd))
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"permute: {tuple(perm)} is not a permutation of {nd} axes")
    shape = [t.shape[p] for p in perm]
    return _contiguous_from(t, shape, [t.strides[p] for p in perm], t.offset)


def transpose(x: Any, dim0: int, dim1: int) -> Any:
    """Swap two axes (materialized)."""
    nd = len(x.shape)
    perm = list(range(nd))
    perm[dim0 % nd], perm[dim1 % nd] = perm[dim1 % nd], perm[dim0 % nd]
    return permute(x, perm)


def slice_(
    x: Any, starts: Sequence[int | None], stops: Sequence[int | None], steps: Sequence[int | None]
) -> Any:
    """``x[s0:e0:st0, s1:e1:st1, ...]`` with Python slice rules (negative steps included)."""
    t = common.strided(x, "slice")
    shape, strides, off = list(t.shape), list(t.strides), t.offset
    for d, (s, e, st) in enumerate(zip(starts, stops, steps, strict=True)):
        if st == 0:
            raise ValueError(f"slice: step of axis {d} must not be zero")
        rng = range(*slice(s, e, st).indices(t.shape[d]))
        off += rng.start * t.strides[d] if len(rng) else 0
        shape[d] = len(rng)
        strides[d] = t.strides[d] * rng.step
    return _contiguous_from(t, shape, strides, off)


def concat(xs: Sequence[Any], axis: int) -> Any:
    """Concatenate along ``axis``; every other axis and the dtype must agree."""
    ts = [common.strided(x, "concat") for x in xs]
    if not ts:
        raise ValueError("concat: needs at least one input")
    nd = len(ts[0].shape)
    axis %= nd
    for t in ts:
        same = [t.shape[d] == ts[0].shape[d] for d in range(nd) if d != axis]
        if len(t.shape) != nd or not all(same) or t.dtype != ts[0].dtype:
            raise ValueError(
                f"concat: input {t.shape} {t.dtype} does not match {ts[0].shape} {ts[0].dtype} "
                f"off axis {axis}"
            )
    shape = list(ts[0].shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    res = cuda.device_array(tuple(shape), dtype=ts[0].dtype)
    dstr = common.c_strides(shape)
    start = 0
    for t in ts:
        copy_strided(common.flat(res), t.shape, dstr, start * dstr[axis], t, t.strides, t.offset)
        start += t.shape[axis]
    return res


def pad_constant(x: Any, pads: Sequence[int], value: float = 0.0) -> Any:
    """``F.pad(x, pads, value=value)``: pads are (last_lo, last_hi, prev_lo, prev_hi, ...)."""
    t = common.strided(x, "pad")
    nd = len(t.shape)
    if len(pads) % 2 or len(pads) // 2 > nd or any(p < 0 for p in pads):
        raise ValueError(
            f"pad: pads {tuple(pads)} must be non-negative pairs for at most {nd} axes"
        )
    lo, hi = [0] * nd, [0] * nd
    for j in range(len(pads) // 2):
        lo[nd - 1 - j], hi[nd - 1 - j] = int(pads[2 * j]), int(pads[2 * j + 1])
    shape = [t.shape[d] + lo[d] + hi[d] for d in range(nd)]
    res = cuda.device_array(tuple(shape), dtype=t.dtype)
    n = res.size
    if n:
        tpb = common.threads_1d()
        common.launch(
            _fill_kernel, common.blocks_for(n, tpb), tpb, common.flat(res), t.dtype.type(value), n
        )
        dstr = common.c_strides(shape)
        off = sum(lo[d] * dstr[d] for d in range(nd))
        copy_strided(common.flat(res), t.shape, dstr, off, t, t.strides, t.offset)
    return res


@cuda.jit
def _gather_kernel(out, oshape, x, xstr, xoff, idx, axis, per_element, n):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        pos = xoff
        rem = i
        for d in range(oshape.size - 1, -1, -1):
            c = rem % oshape[d]
            rem //= oshape[d]
            if d == axis:
                j = idx[i] if per_element else idx[c]
                if j < 0:
                    j += xstr[oshape.size + d]
                c = j
            pos += c * xstr[d]
        out[i] = x[pos]


def _gather_launch(
    t: common.Strided, out_shape: Sequence[int], idx: Any, axis: int, per: bool
) -> Any:
    res = cuda.device_array(tuple(out_shape), dtype=t.dtype)
    n = res.size
    if n:
        tpb = common.threads_1d()
        # Strides then the input's sizes, so the kernel can wrap negative indices.
        table = common.i64(list(t.strides) + list(t.shape))
        common.launch(_gather_kernel, common.blocks_for(n, tpb), tpb,
            common.flat(res), common.i64(out_shape), t.data, table, t.offset,
            common.flat(common.as_device(idx, np.int64)), axis, per, n,
        )  # fmt: skip
    return res


def _check_indices(op: str, idx: Any, size: int) -> None:
    if not hasattr(idx, "copy_to_host"):
        a = np.asarray(idx)
        if a.size and (a.min() < -size or a.max() >= size):
            raise IndexError(
                f"{op}: index out of range [{-size}, {size}) (got {a.min()}..{a.max()})"
            )


def index_select(x: Any, axis: int, index: Any) -> Any:
    """``torch.index_select(x, axis, index)`` with a 1-D int index (negative wraps)."""
    t = common.strided(x, "index_select")
    axis %= len(t.shape)
    _check_indices("index_select", index, t.shape[axis])
    shape = list(t.shape)
    shape[axis] = int(np.size(index) if not hasattr(index, "size") else index.size)
    idx = index if hasattr(index, "copy_to_host") else np.asarray(index, dtype=np.int64)
    return _gather_launch(t, shape, idx, axis, False)


def gather(x: Any, axis: int, index: Any) -> Any:
    """``torch.gather(x, axis, index)``: out has index's shape (index.shape[d] <= x.shape[d])."""
    t = common.strided(x, "gather")
    axis %= len(t.shape)
    _check_indices("gather", index, t.shape[axis])
    ishape = tuple(int(s) for s in index.shape)
    if len(ishape) != len(t.shape) or any(
        ishape[d] > t.shape[d] for d in range(len(ishape)) if d != axis
    ):
        raise ValueError(
            f"gather: index shape {ishape} does not fit input {t.shape} off axis {axis}"
        )
    idx = index if hasattr(index, "copy_to_host") else np.ascontiguousarray(index, dtype=np.int64)
    return _gather_launch(t, ishape, idx, axis, True)
