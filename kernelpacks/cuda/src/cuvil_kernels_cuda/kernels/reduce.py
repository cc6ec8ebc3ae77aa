"""Generic ``reduce`` over one or more axes: sum, mean, max, min, argmax, argmin.

One block per output element; its threads stride over the reduced elements and combine partials
with a shared-memory tree. The input is strided (kept axes and reduced axes each have a shape and
stride table), so reducing any set of axes of any view needs no transpose. Sums accumulate in
float32; max/min propagate NaN and arg-reductions pick the first NaN, then the first extreme, as
torch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda, float32, int64

from cuvil_kernels_cuda.kernels import common
from cuvil_kernels_cuda.kernels.indexing import strided_pos

OPS = ("sum", "mean", "max", "min", "argmax", "argmin")
_INF = float("inf")


@cuda.jit(device=True)
def _better(bv, bi, av, ai):  # noqa: ANN001, ANN202
    """Whether candidate (bv, bi) beats (av, ai) for a max: NaN first, then value, then index."""
    if av != av:
        return bv != bv and bi < ai
    if bv != bv:
        return True
    return bv > av or (bv == av and bi < ai)


def _build(op: str, block: int) -> Any:
    is_sum = op in ("sum", "mean")
    is_arg = op in ("argmax", "argmin")
    sign = float32(-1.0) if op in ("min", "argmin") else float32(1.0)

    @cuda.jit
    def reduce_kernel(out, x, kshape, kstrides, rshape, rstrides, offset, r_total, divisor):  # noqa: ANN001, ANN202
        vals = cuda.shared.array(block, float32)
        idxs = cuda.shared.array(block, int64)
        o = cuda.blockIdx.x
        t = cuda.threadIdx.x
        base = strided_pos(o, kshape, kstrides, offset)
        acc = float32(0.0) if is_sum else float32(-_INF)
        best = r_total
        r = t
        while r < r_total:
            v = float32(x[strided_pos(r, rshape, rstrides, base)])
            if is_sum:
                acc += v
            elif _better(sign * v, r, acc, best):
                acc = sign * v
                best = r
            r += block
        vals[t] = acc
        idxs[t] = best
        cuda.syncthreads()
        half = block // 2
        while half > 0:
            if t < half:
                if is_sum:
                    vals[t] += vals[t + half]
                elif _better(vals[t + half], idxs[t + half], vals[t], idxs[t]):
                    vals[t] = vals[t + half]
                    idxs[t] = idxs[t + half]
            cuda.syncthreads()
            half //= 2
        if t == 0:
            if is_arg:
                out[o] = idxs[0]
            elif is_sum:
                out[o] = vals[0] / divisor
            else:
                out[o] = sign * vals[0]

    return reduce_kernel


def reduce(op: str, x: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Any:
    """Reduce ``x`` over ``axes`` (all axes when None) with ``op`` in :data:`OPS`.

    Arg-reductions return int64 flat indices into the reduced axes (row-major), which for one
    axis is the index along it, as ``torch.argmax(x, dim)``.
    """
    if op not in OPS:
        raise KeyError(f"reduce op {op!r} is unknown; known: {', '.join(OPS)}")
    t = common.strided(x, f"reduce {op}")
    dtype = common.check_float(f"reduce {op}", t.dtype)
    nd = len(t.shape)
    axes = tuple(range(nd)) if axes is None else tuple(sorted({a % nd for a in axes} if nd else ()))
    kept = [d for d in range(nd) if d not in axes]
    kshape = [t.shape[d] for d in kept]
    rshape = [t.shape[d] for d in axes]
    r_total = int(np.prod(rshape, dtype=np.int64))
    if r_total == 0 and op not in ("sum", "mean"):
        raise ValueError(f"reduce {op}: cannot reduce an empty axis (shape {t.shape}, axes {axes})")
    out_shape = [1 if d in axes else t.shape[d] for d in range(nd)] if keepdims else kshape
    out_dtype = np.int64 if op.startswith("arg") else dtype
    res = cuda.device_array(tuple(out_shape), dtype=out_dtype)
    n_out = int(np.prod(kshape, dtype=np.int64))
    if n_out == 0:
        return res
    block = common.threads_1d()
    kernel = common.cached(("reduce", op, block), lambda: _build(op, block))
    divisor = float(r_total) if op == "mean" else 1.0
    common.launch(kernel, n_out, block,
        common.flat(res), t.data,
        common.i64(kshape or [1]), common.i64([t.strides[d] for d in kept] or [0]),
        common.i64(rshape or [1]), common.i64([t.strides[d] for d in axes] or [0]),
        t.offset, r_total, np.float32(divisor),
    )  # fmt: skip
    return res
