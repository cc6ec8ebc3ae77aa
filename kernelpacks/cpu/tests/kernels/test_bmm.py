"""The batched matmul's operands read in place: a strided right operand packed from flat
storage, a left operand with strided rows -- bit-identical to the contiguous copies."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import bmm, gemm
from cuvil_kernels_cpu.lowering.context import strided_view

W = np.zeros(1, np.int64)


def _pack(b: np.ndarray) -> np.ndarray:
    packed = np.full(bmm.packed_rhs_shape(*b.shape), np.nan, np.float32)
    bmm.pack_rhs(np.ascontiguousarray(b), packed, np.zeros(1, np.int64))
    return packed


@pytest.mark.parametrize(("pre", "perm"), [
    ((9, 3, 20), (1, 0, 2)),    # v: [S, H, D] -> [H, S, D], rows contiguous
    ((9, 3, 20), (1, 2, 0)),    # k^T: [S, H, D] -> [H, D, S], the K axis contiguous
    ((2, 9, 3, 20), (2, 3, 0, 1)),  # neither axis contiguous (the generic loop)
])  # fmt: skip
def test_pack_rhs_strided_equals_packing_the_copy(pre: tuple[int, ...], perm: tuple[int, ...],
                                                   rng: np.random.Generator) -> None:  # fmt: skip
    src = rng.standard_normal(pre).astype(np.float32)
    view = src.transpose(perm)
    b = view.reshape(-1, *view.shape[-2:]) if view.ndim == 3 else view.reshape(3 * 20, 2, 9)
    nb, k, n = b.shape
    strides = strided_view(src, (pre, perm), (nb, k, n)).strides
    packed = np.full(bmm.packed_rhs_shape(nb, k, n), np.nan, np.float32)
    bmm.pack_rhs_strided(src.reshape(-1), packed, k, n, *(s // 4 for s in strides),
                         np.zeros(1, np.int64))  # fmt: skip
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
