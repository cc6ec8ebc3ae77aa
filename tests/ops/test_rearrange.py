"""flip and diagonal (cuvil_ref/ops/rearrange.py) against PyTorch CPU: axis sets, negative axes,
offsets past the edges, 0-d and empty tensors, every dtype; exact comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from tests.ops.conftest import assert_close, from_torch, run_op, sample, to_torch

DTYPES = [np.float32, np.int8, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_matches_torch(dtype: Any) -> None:
    for shape, axes in [((2, 3, 4), (0,)), ((2, 3, 4), (-1, 0)), ((3, 0, 2), (1, 2)), ((5,), ())]:
        x = sample(shape, dtype, seed=1)
        want = from_torch(torch.flip(to_torch(x), axes))
        assert_close(run_op("flip", [x], {"axes": axes}), want)


def test_flip_rank0_and_repeated_axis() -> None:
    x = np.asarray(np.float32(3.0))
    assert_close(run_op("flip", [x], {"axes": (0,)}), from_torch(torch.flip(to_torch(x), (0,))))
    with pytest.raises(ShapeError, match="repeated axis"):
        run_op("flip", [np.zeros((2, 2), np.float32)], {"axes": (0, -2)})


@pytest.mark.parametrize("dtype", DTYPES)
def test_diagonal_matches_torch(dtype: Any) -> None:
    cases = [
        ((4, 5), 0, 0, 1),
        ((4, 5), 2, 0, 1),
        ((4, 5), -3, 0, 1),
        ((4, 5), 9, 0, 1),
        ((4, 5), -9, 1, 0),
        ((2, 3, 4), 1, -1, 0),
        ((2, 3, 4, 5), -1, 1, 3),
        ((0, 3), 0, 0, 1),
    ]
    for shape, offset, d1, d2 in cases:
        x = sample(shape, dtype, seed=2)
        want = from_torch(torch.diagonal(to_torch(x), offset, d1, d2))
        got = run_op("diagonal", [x], {"offset": offset, "dim1": d1, "dim2": d2})
        assert_close(got, want)


def test_diagonal_of_one_axis_twice_is_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="two different axes"):
        run_op("diagonal", [np.zeros((3, 3), np.float32)], {"dim1": 1, "dim2": -1})
