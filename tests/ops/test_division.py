"""floor_divide, trunc_divide, fmod and remainder (cuvil_ref/ops/division.py) against PyTorch CPU
(``div(rounding_mode=...)``, ``fmod``, ``remainder``): every sign combination, zero divisors and
NaN/Inf for floats, integer wraparound at the limits, broadcasting and promotion, and the error
for integer division by zero. Results are exact (ints) or compared at 1e-6 (floats)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import InterpretError
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch

TORCH: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "floor_divide": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "trunc_divide": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "fmod": torch.fmod,
    "remainder": torch.remainder,
}
FLOATS = np.array(
    [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 0.1, 1e30, np.inf, -np.inf, np.nan],
    dtype=np.float32,
)


@pytest.mark.parametrize("op", list(TORCH))
def test_float_grid_matches_torch(op: str) -> None:
    a, b = np.meshgrid(FLOATS, FLOATS)
    got = run_op(op, [a, b])
    want = from_torch(TORCH[op](to_torch(a), to_torch(b)))
    assert_close(got, want)
    finite = np.isfinite(want) & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


@pytest.mark.parametrize("op", list(TORCH))
def test_random_floats_match_torch(op: str) -> None:
    a, b = sample((6, 7), seed=1, scale=10.0), sample((7,), seed=2)
    assert_close(run_op(op, [a, b]), from_torch(TORCH[op](to_torch(a), to_torch(b))))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("op", list(TORCH))
def test_integers_match_torch(op: str, dtype: Any) -> None:
    vals = np.arange(-9, 10) if dtype != np.uint8 else np.arange(0, 19)
    a, b = np.meshgrid(vals.astype(dtype), vals.astype(dtype))
    keep = b != 0
    a, b = a[keep], b[keep]
    info = np.iinfo(dtype)
    # min / -1 overflows: i8/i16 wrap (C computes them in int); for i32/i64 torch's CPU kernel
    # traps (SIGFPE), so that pair is left out there
    wraps = np.dtype(dtype).itemsize <= 2 and info.min < 0
    a = np.concatenate([a, np.array([info.min, info.max, info.min], dtype=dtype)])
    b = np.concatenate([b, np.array([-1 if wraps else 1, 3, 7], dtype=dtype)])
    assert_close(run_op(op, [a, b]), from_torch(TORCH[op](to_torch(a), to_torch(b))))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", list(TORCH))
def test_half_types_match_torch(op: str, dtype: Any) -> None:
    a, b = np.meshgrid(FLOATS[:10].astype(dtype), FLOATS[:10].astype(dtype))
    assert_close(run_op(op, [a, b]), from_torch(TORCH[op](to_torch(a), to_torch(b))))


def test_mixed_dtypes_promote_like_torch() -> None:
    a, b = sample((3, 4), np.int32, seed=3), sample((4,), np.float16, seed=4)
    for op in TORCH:
        got, want = run_op(op, [a, b]), from_torch(TORCH[op](to_torch(a), to_torch(b)))
        assert got.dtype == want.dtype
        assert_close(got, want)


def test_empty_and_rank0_match_torch() -> None:
    for a, b in [(sample((0, 3)), sample((3,))), (np.float32(7.5), np.float32(-2.0))]:
        a, b = np.asarray(a), np.asarray(b)
        for op in TORCH:
            assert_close(run_op(op, [a, b]), from_torch(TORCH[op](to_torch(a), to_torch(b))))


@pytest.mark.parametrize("op", list(TORCH))
def test_integer_division_by_zero_is_an_error_as_in_torch(op: str) -> None:
    a, b = np.array([3, 4], dtype=np.int32), np.array([1, 0], dtype=np.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        TORCH[op](to_torch(a), to_torch(b))
    with pytest.raises(InterpretError, match="integer division by zero"):
        run_op(op, [a, b])
