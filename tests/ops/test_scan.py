"""cumsum (cuvil_ref/ops/scan.py) against PyTorch CPU: axes, dtypes (ints and bool give i64,
wrapping; floats accumulate in f64), NaN/Inf propagation, 0-d and empty tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, BF16, np.int8, np.uint8, np.int32, np.int64, np.bool_]
)
def test_cumsum_matches_torch(dtype: Any) -> None:
    for shape, axis in [((3, 4, 5), 1), ((9,), 0), ((2, 7), -1), ((0, 3), 0), ((), 0), ((), -1)]:
        x = sample(shape, dtype, seed=1, edge=True)
        assert_close(
            run_op("cumsum", [x], {"axis": axis}), from_torch(torch.cumsum(to_torch(x), axis))
        )


def test_long_f32_cumsum_stays_close_to_torch() -> None:
    x = sample((4000,), seed=2)
    assert_close(run_op("cumsum", [x], {"axis": 0}), from_torch(torch.cumsum(to_torch(x), 0)))


def test_int64_cumsum_wraps_like_torch() -> None:
    x = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    assert_close(run_op("cumsum", [x], {"axis": 0}), from_torch(torch.cumsum(to_torch(x), 0)))


def test_bad_axis_is_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="axis 2"):
        run_op("cumsum", [np.zeros((2, 3), np.float32)], {"axis": 2})
