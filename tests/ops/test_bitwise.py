"""bitwise_and/or/xor/not (cuvil_ref/ops/bitwise.py) against PyTorch CPU on every integer dtype
and bool: the dtype limits (two's complement), broadcasting, promotion, 0-d and empty tensors;
float inputs are refused. Exact comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from tests.ops.conftest import assert_close, from_torch, run_op, sample, to_torch

DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


def _limits(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    x = sample(shape, dtype, seed=seed)
    if np.dtype(dtype).kind in "iu" and x.size >= 3:
        info = np.iinfo(dtype)
        x.flat[:3] = [info.min, info.max, 0]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_binary_matches_torch(op: str, dtype: Any) -> None:
    for sa, sb in [((4, 5), (4, 5)), ((3, 1), (4,)), ((), (2, 3)), ((0, 2), (2,))]:
        a, b = _limits(dtype, sa, 1), _limits(dtype, sb, 2)
        want = from_torch(getattr(torch, op)(to_torch(a), to_torch(b)))
        assert_close(run_op(op, [a, b]), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_not_matches_torch(dtype: Any) -> None:
    for shape in [(3, 4), (), (0,)]:
        x = _limits(dtype, shape, 3)
        assert_close(run_op("bitwise_not", [x]), from_torch(torch.bitwise_not(to_torch(x))))


def test_mixed_integer_dtypes_promote_like_torch() -> None:
    a, b = sample((5,), np.int8, seed=4), sample((5,), np.uint8, seed=5)
    got, want = (
        run_op("bitwise_xor", [a, b]),
        from_torch(torch.bitwise_xor(to_torch(a), to_torch(b))),
    )
    assert got.dtype == want.dtype == np.int16
    assert_close(got, want)


def test_floats_are_refused() -> None:
    with pytest.raises(ShapeError, match="f32"):
        run_op("bitwise_and", [np.ones(2, np.float32), np.ones(2, np.float32)])
