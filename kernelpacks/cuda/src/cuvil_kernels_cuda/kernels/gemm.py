"""Tiled shared-memory GEMM (batched, fp32 accumulate) with a fused epilogue; ``linear`` on top.

``out[b, m, n] = epilogue(sum_k A[b, m, k] * B[b, k, n])``. Each block computes a TILE x TILE
output tile, staging TILE x TILE slices of A and B in shared memory; edges that do not divide the
tile load zeros. A and B are strided (batch axes broadcast with stride 0, a transposed weight is
just swapped strides), so ``linear`` reads its (N, K) weight in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32

from cuvil_kernels_cuda.kernels import common, epilogue_device
from cuvil_kernels_cuda.kernels.epilogue import NO_EPILOGUE, Epilogue
from cuvil_kernels_cuda.kernels.indexing import strided_pos


def _build(tile: int, key: tuple[str, bool], has_bias: bool, has_res: bool) -> Any:
    apply = epilogue_device.build(key, has_bias, has_res)

    @cuda.jit
    def gemm_kernel(out, a, ab, am, ak, ao, b, bb, bk, bn, bo, bshape, dims, bias, res, ap):  # noqa: ANN001, ANN202
        sa = cuda.shared.array((tile, tile), float32)
        sb = cuda.shared.array((tile, tile), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        z = cuda.blockIdx.z
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        m_total = dims[0]
        n_total = dims[1]
        k_total = dims[2]
        abase = strided_pos(z, bshape, ab, ao)
        bbase = strided_pos(z, bshape, bb, bo)
        acc = float32(0.0)
        for k0 in range(0, k_total, tile):
            ka = k0 + tx
            if row < m_total and ka < k_total:
                sa[ty, tx] = float32(a[abase + row * am + ka * ak])
            else:
                sa[ty, tx] = float32(0.0)
            kb = k0 + ty
            if kb < k_total and col < n_total:
                sb[ty, tx] = float32(b[bbase + kb * bk + col * bn])
            else:
                sb[ty, tx] = float32(0.0)
            cuda.syncthreads()
            for kk in range(tile):
                acc += sa[ty, kk] * sb[kk, tx]
            cuda.syncthreads()
        if row < m_total and col < n_total:
            idx = (z * m_total + row) * n_total + col
            out[idx] = apply(acc, col, idx, bias, res, ap)

    return gemm_kernel


#: Up to this many output rows per batch a GEMM is a GEMV-like skinny product (batch-1 linear
#: layers): one thread per output column with a plain K loop reads A's row from cache and B
#: coalesced, and beats staging mostly-empty tiles through shared memory.
GEMV_MAX_ROWS = 4
GEMV_BLOCK = 128


def _build_gemv(key: tuple[str, bool], has_bias: bool, has_res: bool, unroll: int) -> Any:
    """One thread per output column; the K loop is unrolled ``unroll`` times by hand (a constant
    trip count LLVM flattens), then a remainder loop. The sum runs in the same sequential order
    for every factor, so results do not depend on it."""
    apply = epilogue_device.build(key, has_bias, has_res)

    @cuda.jit
    def gemv_kernel(out, a, ab, am, ak, ao, b, bb, bk, bn, bo, bshape, dims, bias, res, ap):  # noqa: ANN001, ANN202
        col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        row = cuda.blockIdx.y
        z = cuda.blockIdx.z
        m_total = dims[0]
        n_total = dims[1]
        k_total = dims[2]
        if col < n_total and row < m_total:
            abase = strided_pos(z, bshape, ab, ao) + row * am
            bbase = strided_pos(z, bshape, bb, bo) + col * bn
            acc = float32(0.0)
            k_main = k_total - k_total % unroll
            for k0 in range(0, k_main, unroll):
                for u in range(unroll):
                    kk = k0 + u
                    acc += float32(a[abase + kk * ak]) * float32(b[bbase + kk * bk])
            for kk in range(k_main, k_total):
                acc += float32(a[abase + kk * ak]) * float32(b[bbase + kk * bk])
            idx = (z * m_total + row) * n_total + col
            out[idx] = apply(acc, col, idx, bias, res, ap)

    return gemv_kernel


def matmul(
    a: Any,
    b: Any,
    bias: Any = None,
    residual: Any = None,
    epilogue: Epilogue = NO_EPILOGUE,
    out: Any = None,
) -> Any:
    """``a @ b`` with numpy matmul batch broadcasting (both at least 2-D), then the epilogue.

    ``bias`` has N values (added per output column); ``residual`` has the output's shape.
    """
    ta, tb = common.strided(a, "matmul"), common.strided(b, "matmul")
    if len(ta.shape) < 2 or len(tb.shape) < 2 or ta.shape[-1] != tb.shape[-2]:
        raise ValueError(
            f"matmul: shapes {ta.shape} @ {tb.shape} do not line up (need ..MxK @ ..KxN)"
        )
    batch = tuple(int(d) for d in np.broadcast_shapes(ta.shape[:-2], tb.shape[:-2]))
    m, k = ta.shape[-2:]
    n = tb.shape[-1]
    a_b = common.Strided(ta.data, ta.shape[:-2], ta.strides[:-2], 0).broadcast_to(batch)
    b_b = common.Strided(tb.data, tb.shape[:-2], tb.strides[:-2], 0).broadcast_to(batch)
    return gemm(
        ta, a_b, ta.strides[-2], ta.strides[-1],
        tb, b_b, tb.strides[-2], tb.strides[-1],
        batch, (m, n, k), bias, residual, epilogue, out, "matmul",
    )  # fmt: skip


def linear(
    x: Any,
    weight: Any,
    bias: Any = None,
    residual: Any = None,
    epilogue: Epilogue = NO_EPILOGUE,
    out: Any = None,
) -> Any:
    """``x @ weight.T + bias`` for ``x`` (..., K) and ``weight`` (N, K), with the epilogue."""
    tx, tw = common.strided(x, "linear"), common.strided(weight, "linear")
    if len(tw.shape) != 2 or not tx.shape or tx.shape[-1] != tw.shape[1]:
        raise ValueError(f"linear: input {tx.shape} and weight {tw.shape} need (..., K) and (N, K)")
    lead = tx.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    if len(lead) == 1:
        xs = tx
    elif tx.strides == common.c_strides(tx.shape):
        xs = common.Strided(tx.data, (rows, tx.shape[-1]), (tx.shape[-1], 1), tx.offset)
    else:
        # Fold the leading axes into M; a non-contiguous view is made contiguous first.
        xs = common.strided(np.ascontiguousarray(_host(x)).reshape(rows, tx.shape[-1]), "linear")
    n, k = tw.shape
    res = gemm(
        xs, (0,), xs.strides[0], xs.strides[1],
        tw, (0,), tw.strides[1], tw.strides[0],
        (1,), (rows, n, k), bias, residual, epilogue, None, "linear",
    )  # fmt: skip
    shaped = res.reshape(tuple(lead) + (n,))
    if out is not None:
        out.copy_to_device(shaped)
        return out
    return shaped


def _host(x: Any) -> np.ndarray:
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


def gemm(
    ta: common.Strided,
    a_batch_strides: Sequence[int],
    a_m: int,
    a_k: int,
    tb: common.Strided,
    b_batch_strides: Sequence[int],
    b_k: int,
    b_n: int,
    batch: Sequence[int],
    mnk: tuple[int, int, int],
    bias: Any,
    residual: Any,
    epilogue: Epilogue,
    out: Any,
    op: str,
) -> Any:
    """The launch under :func:`matmul` and :func:`linear`, on explicit strides."""
    dtype = common.check_float(op, ta.dtype, tb.dtype)
    m, n, k = mnk
    res = common.new_output(tuple(batch) + (m, n), dtype, out, op)
    batch = tuple(batch) or (1,)
    nb = int(np.prod(batch, dtype=np.int64))
    if res.size == 0:
        return res
    bias_d = common.as_device(np.zeros(1, np.float32) if bias is None else bias)
    if bias is not None and bias_d.size != n:
        raise ValueError(f"{op}: bias has {bias_d.size} values, expected N={n}")
    res_d = common.as_device(np.zeros(1, np.float32) if residual is None else residual)
    if residual is not None and res_d.size != res.size:
        raise ValueError(f"{op}: residual has {res_d.size} values, expected {res.size}")
    tile = common.gemm_tile()
    has_bias, has_res = bias is not None, residual is not None
    if m <= GEMV_MAX_ROWS:
        unroll = common.loop_unroll()
        key = ("gemv", epilogue.key(), has_bias, has_res, unroll)
        kernel = common.cached(key, lambda: _build_gemv(epilogue.key(), has_bias, has_res, unroll))
        grid, block = (common.blocks_for(n, GEMV_BLOCK), m, nb), (GEMV_BLOCK,)
    else:
        key = ("gemm", tile, epilogue.key(), has_bias, has_res)
        kernel = common.cached(key, lambda: _build(tile, epilogue.key(), has_bias, has_res))
        grid, block = (common.blocks_for(n, tile), common.blocks_for(m, tile), nb), (tile, tile)
    common.launch(kernel, grid, block,
        common.flat(res), ta.data, common.i64(a_batch_strides), a_m, a_k, ta.offset,
        tb.data, common.i64(b_batch_strides), b_k, b_n, tb.offset, common.i64(batch),
        common.i64((m, n, k)), common.flat(bias_d), common.flat(res_d),
        common.f32((epilogue.act_min, epilogue.act_max)),
    )  # fmt: skip
    return res
