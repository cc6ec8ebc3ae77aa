"""Joining and cropping ops against torch: concat (with dtype promotion and zero-size inputs),
split and chunk, and concat's shape checks. Slice and pad are compared in
``test_shape_ops.py``'s table with the other shape ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run, run1, t


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_split(axis: int) -> None:
    a, b, c = randn(2, 3, 4), randn(2, 3, 4, seed=1), randn(2, 3, 4, seed=2)
    close(run1("concat", [a, b, c], {"axis": axis}), torch.cat([t(a), t(b), t(c)], axis))
    n = a.shape[axis]
    sizes = (1, n - 1) if n > 1 else (1,)
    parts = run("split", [a], {"axis": axis, "sizes": (*sizes, 0)})
    want = torch.split(t(a), [*sizes, 0], axis)
    assert len(parts) == len(want)
    for p, w in zip(parts, want, strict=True):
        close(p, w)


def test_concat_promotes_and_zero_size() -> None:
    a, b = randn(2, 3), np.arange(6, dtype=np.int64).reshape(2, 3)
    close(run1("concat", [a, b], {"axis": 0}), torch.cat([t(a), t(b)]))
    z = randn(0, 3)
    close(run1("concat", [z, a, z]), torch.cat([t(z), t(a), t(z)]))


def test_chunk_is_split() -> None:
    x = randn(7, 2)
    parts = run("split", [x], {"sizes": (3, 3, 1)})
    for p, w in zip(parts, torch.chunk(t(x), 3), strict=True):
        close(p, w)


def test_concat_rejects_mismatched_dims() -> None:
    with pytest.raises(ShapeError, match="other dims"):
        get_op("concat").infer_types([TensorType((2, 3)), TensorType((2, 4))], {"axis": 0})
    out = get_op("concat").infer_types([TensorType((2, 3), DType.i32), TensorType((1, 3))], {})
    assert out[0] == TensorType((3, 3), DType.f32)
