"""ceil, floor, trunc, round (half to even, with decimals) and sign (cuvil_ref/ops/rounding.py)
against PyTorch CPU: halfway points, signed zeros, NaN/Inf, large values, f16/bf16, integer and
bool sign. Rounding results are exact, so the comparison is exact."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch

HALVES = np.array(
    [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.0, 0.0, 1e20, -3.7, 2.675, 1234.5]
    + [np.inf, -np.inf, np.nan, 8388609.0],
    dtype=np.float32,
)


@pytest.mark.parametrize("op", ["ceil", "floor", "trunc", "round"])
def test_rounding_matches_torch_exactly(op: str) -> None:
    for x in (HALVES, sample((3, 7), seed=1, edge=True), sample((), seed=2), sample((0, 4))):
        got, want = run_op(op, [x]), from_torch(getattr(torch, op)(to_torch(x)))
        assert_close(got, want, tol=0.0)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 kept


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2, -3, 8, -40])
def test_round_decimals_matches_torch(decimals: int) -> None:
    x = np.concatenate([HALVES, sample((20,), seed=3, scale=1000.0)])
    want = from_torch(torch.round(to_torch(x), decimals=decimals))
    assert_close(run_op("round", [x], {"decimals": decimals}), want, tol=0.0)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", ["ceil", "floor", "trunc", "round"])
def test_half_types_match_torch(op: str, dtype: Any) -> None:
    x = sample((5, 6), dtype, seed=4, edge=True)
    assert_close(run_op(op, [x]), from_torch(getattr(torch, op)(to_torch(x))), tol=0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int64, np.bool_])
def test_sign_matches_torch(dtype: Any) -> None:
    x = HALVES.astype(dtype) if np.dtype(dtype).kind == "f" else sample((4, 5), dtype, seed=5)
    got, want = run_op("sign", [x]), from_torch(torch.sign(to_torch(x)))
    assert_close(got, want, tol=0.0)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # sign(-0.0) = +0
