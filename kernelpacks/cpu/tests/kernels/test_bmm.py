"""The batched matmul's operands: the right one packed from flat storage with any strides (a
contiguous operand, or a transpose read in place), a left operand with strided rows --
bit-identical to the contiguous copies."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import bmm, gemm
from cuvil_kernels_cpu.lowering.context import strided_view

W = np.zeros(1, np.int64)


def _pack(b: np.ndarray) -> np.ndarray:
    """The panels ``[B, NP, K, NR]`` by numpy (zero columns past N)."""
    nb, k, n = b.shape
    npanels, nr = bmm.packed_rhs_shape(nb, k, n)[1], bmm.packed_rhs_shape(nb, k, n)[3]
    wide = np.zeros((nb, k, npanels * nr), np.float32)
    wide[:, :, :n] = b
    return np.ascontiguousarray(wide.reshape(nb, k, npanels, nr).transpose(0, 2, 1, 3))


def _pack_kernel(src: np.ndarray, pre: tuple[int, ...], perm: tuple[int, ...],
                 shape: tuple[int, int, int]) -> np.ndarray:  # fmt: skip
    nb, k, n = shape
    strides = strided_view(src, (pre, perm), shape).strides
    packed = np.full(bmm.packed_rhs_shape(nb, k, n), np.nan, np.float32)
    bmm.pack_rhs(src.reshape(-1), packed, k, n, *(s // 4 for s in strides),
                 np.zeros(1, np.int64))  # fmt: skip
    return packed


@pytest.mark.parametrize(("pre", "perm"), [
    ((3, 20, 9), (0, 1, 2)),    # a contiguous operand (N = 9: one partial panel)
    ((2, 7, 150), (0, 1, 2)),   # contiguous, N = 150: three panels, the last partial
    ((9, 3, 20), (1, 0, 2)),    # v: [S, H, D] -> [H, S, D], rows contiguous
    ((9, 3, 20), (1, 2, 0)),    # k^T: [S, H, D] -> [H, D, S], the K axis contiguous
    ((2, 9, 3, 20), (2, 3, 0, 1)),  # neither axis contiguous (the generic loop)
])  # fmt: skip
def test_pack_rhs_equals_packing_the_copy(pre: tuple[int, ...], perm: tuple[int, ...],
                                          rng: np.random.Generator) -> None:  # fmt: skip
    src = rng.standard_normal(pre).astype(np.float32)
    view = src.transpose(perm)
    b = view.reshape(-1, *view.shape[-2:]) if view.ndim == 3 else view.reshape(3 * 20, 2, 9)
    packed = _pack_kernel(src, pre, perm, (b.shape[0], b.shape[1], b.shape[2]))
    np.testing.assert_array_equal(packed, _pack(b))  # the zero columns past N included


def test_bmm_reads_strided_rows(rng: np.random.Generator) -> None:
    """q split from [S, H, D] as [H, S, D] without a copy (13 rows: a partial row tile)."""
    q = rng.standard_normal((13, 3, 24)).astype(np.float32)
    b = rng.standard_normal((3, 24, 70)).astype(np.float32)
    strided = q.transpose(1, 0, 2)
    packed = _pack(b)
    bias = gemm.pack_bias(None, 1, 70)
    res = np.zeros((1, 1, 1), np.float32)
    outs = []
    for a in (strided, np.ascontiguousarray(strided)):
        out = np.empty((3, 13, 70), np.float32)
        bmm.bmm(a, packed, bias, res, out, np.float32(-np.inf), np.float32(np.inf), 0, 0, 2,
                np.zeros(1, np.int64))  # fmt: skip
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], strided @ b, rtol=1e-5, atol=1e-4)
