"""sort and topk (cuvil_ref/ops/sorting.py) against PyTorch CPU: both directions, every axis,
NaN (largest) and signed zeros (equal), ties in the stable order PyTorch gives with
``stable=True``, integer and bool dtypes, 0-d and empty tensors. Values and indices are exact."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from tests.ops.conftest import assert_close, from_torch, run_op, sample, to_torch

NAN_ZEROS = np.array([3.0, np.nan, 1.0, -0.0, 0.0, np.nan, -np.inf, 2.0, np.inf, 1.0], np.float32)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int64, np.bool_])
def test_sort_matches_torch_stable_sort(dtype: Any, descending: bool) -> None:
    x = sample((4, 5, 6), dtype, seed=1)
    if np.dtype(dtype).kind in "iu":
        x = (x % 4).astype(dtype)  # many ties
    for axis in (0, 1, -1):
        values, indices = run_op("sort", [x], {"axis": axis, "descending": descending})
        tv, ti = torch.sort(to_torch(x), dim=axis, descending=descending, stable=True)
        assert_close(values, from_torch(tv))
        assert_close(indices, from_torch(ti))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_puts_nan_largest_and_keeps_signed_zero_order(descending: bool) -> None:
    values, indices = run_op("sort", [NAN_ZEROS], {"descending": descending})
    tv, ti = torch.sort(to_torch(NAN_ZEROS), descending=descending, stable=True)
    assert_close(values, from_torch(tv))
    assert_close(indices, from_torch(ti))


def test_sort_rank0_and_empty() -> None:
    values, indices = run_op("sort", [np.asarray(np.float32(2.5))], {"axis": 0})
    assert values == np.float32(2.5) and indices.dtype == np.int64 and indices.shape == ()
    values, indices = run_op("sort", [np.zeros((3, 0), np.float32)], {"axis": 1})
    assert values.shape == indices.shape == (3, 0)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_topk_matches_torch_on_distinct_values(k: int, largest: bool) -> None:
    x = np.random.default_rng(2).permutation(60).astype(np.float32).reshape(2, 5, 6)
    for axis in (-1, 1):
        if k > x.shape[axis]:
            continue
        values, indices = run_op("topk", [x], {"k": k, "axis": axis, "largest": largest})
        tv, ti = torch.topk(to_torch(x), k, dim=axis, largest=largest)
        assert_close(values, from_torch(tv))
        assert_close(indices, from_torch(ti))


def test_topk_with_nan_and_ties_gives_torchs_values_and_stable_indices() -> None:
    for largest in (True, False):
        values, indices = run_op("topk", [NAN_ZEROS], {"k": 4, "largest": largest})
        tv, _ = torch.topk(to_torch(NAN_ZEROS), 4, largest=largest)
        assert_close(values, from_torch(tv))
        _, si = torch.sort(to_torch(NAN_ZEROS), descending=largest, stable=True)
        assert_close(indices, from_torch(si[:4]))


def test_topk_k_out_of_range_is_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="k = 7"):
        run_op("topk", [np.zeros((2, 6), np.float32)], {"k": 7})
