"""The epilogue as a CUDA device function, shared by the GEMM, GEMV and conv kernels.

``build(key, has_bias, has_res)`` returns ``apply(acc, channel, idx, bias, res, ap)``: the
accumulator plus the bias of its output channel, the residual before or after the activation
(``key`` = :meth:`Epilogue.key`), ready to store.
"""

from __future__ import annotations

from typing import Any

from numba import cuda, float32

from cuvil_kernels_cuda.kernels import scalar_ops


def build(key: tuple[str, bool], has_bias: bool, has_res: bool) -> Any:
    act = scalar_ops.UNARY[key[0]]
    res_first = key[1]

    @cuda.jit(device=True)
    def apply(acc, channel, idx, bias, res, ap):  # noqa: ANN001, ANN202
        v = acc
        if has_bias:
            v += float32(bias[channel])
        if has_res and res_first:
            v += float32(res[idx])
        v = act(v, ap[0], ap[1])
        if has_res and not res_first:
            v += float32(res[idx])
        return v

    return apply
