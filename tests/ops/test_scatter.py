"""scatter (assign, sum, prod, mean, amax, amin; with and without self) and slice_scatter
against torch: repeated targets, NaN, integer wraparound and floor-division means, small
indices, out-of-range errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

RNG = np.random.default_rng(0)
INDEX = RNG.integers(0, 4, (3, 5))  # repeats along dim 0 of a [4, 6] target


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_scatter_reduce_matches_torch(reduce: str, include_self: bool, dtype: type) -> None:
    x = randn(4, 6, seed=1).astype(dtype) if dtype == np.float32 else RNG.integers(-9, 9, (4, 6))
    src = randn(3, 5, seed=2) if dtype == np.float32 else RNG.integers(-9, 9, (3, 5))
    if dtype == np.float32:
        src[0, 0] = np.nan
    want = t(x).scatter_reduce(0, t(INDEX), t(src), reduce, include_self=include_self)
    got = run1(
        "scatter", [x, INDEX, src], {"axis": 0, "reduce": reduce, "include_self": include_self}
    )
    close(got, want)


def test_scatter_assign_keeps_the_last_write_and_corner_of_src() -> None:
    x = np.zeros((4, 6), np.float32)
    src = randn(5, 7, seed=3)  # larger than index: only index's corner is read
    want = t(x).scatter(1, t(INDEX), t(src))
    close(run1("scatter", [x, INDEX, src], {"axis": 1}), want)


def test_scatter_integer_sum_wraps() -> None:
    x = np.full((2,), 120, np.int8)
    src = np.full((3,), 100, np.int8)
    idx = np.array([0, 0, 1])
    want = t(x).scatter_add(0, t(idx), t(src))
    close(run1("scatter", [x, idx, src], {"axis": 0, "reduce": "sum"}), want)


def test_scatter_errors() -> None:
    with pytest.raises(InterpretError, match="out of range"):
        run1(
            "scatter", [np.zeros(3, np.float32), np.array([3]), np.ones(1, np.float32)], {"axis": 0}
        )
    with pytest.raises(ShapeError, match="larger"):
        get_op("scatter").infer_types(
            [TensorType((2, 2)), TensorType((3, 2), DType.i64), TensorType((3, 2))], {"axis": 1}
        )


@pytest.mark.parametrize(("start", "end", "step"), [(0, None, 1), (1, 5, 2), (-3, None, 1)])
def test_slice_scatter_matches_torch(start: int, end: int | None, step: int) -> None:
    x = randn(4, 6, seed=5)
    n = len(range(*slice(start, end, step).indices(6)))
    src = randn(4, n, seed=6)
    want = torch.slice_scatter(t(x), t(src), 1, start, end, step)
    got = run1("slice_scatter", [x, src], {"axis": 1, "start": start, "end": end, "step": step})
    close(got, want)
