"""Trigonometric, hyperbolic, exp/log-variant ops and atan2 (cuvil_ref/ops/transcendental.py)
against PyTorch CPU: f32 with edge values (NaN, +-Inf, +-0, out-of-domain inputs), 0-d and empty
shapes, f16/bf16 (computed in f32 and rounded once). Tolerance: 1e-6 relative to the output's
magnitude for f32, one rounding step for the half types."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from cuvil_ref.ops.transcendental import UNARY
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch

OPS = [name for name, _, _ in UNARY]
SHAPES = [(), (1,), (7,), (3, 5), (2, 0, 3)]
#: values around each op's domain boundaries and poles
SPECIAL = np.array(
    [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, 1e-8, -1e-8, 88.0, -88.0, 100.0]
    + [np.inf, -np.inf, np.nan, np.pi / 2, -np.pi, 1e4],
    dtype=np.float32,
)


def _torch(op: str) -> Any:
    return getattr(torch, op)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_unary_f32_matches_torch(op: str, shape: tuple[int, ...]) -> None:
    x = sample(shape, seed=1, edge=True, scale=1.0)
    assert_close(run_op(op, [x]), from_torch(_torch(op)(to_torch(x))), tol=4e-6)


@pytest.mark.parametrize("op", OPS)
def test_domain_edges_and_poles_match_torch(op: str) -> None:
    assert_close(run_op(op, [SPECIAL]), from_torch(_torch(op)(to_torch(SPECIAL))), tol=4e-6)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", OPS)
def test_half_types_match_torch(op: str, dtype: Any) -> None:
    x = sample((4, 9), dtype, seed=2, edge=True, scale=1.0)
    assert_close(run_op(op, [x]), from_torch(_torch(op)(to_torch(x))))


def test_expm1_and_log1p_keep_precision_for_tiny_inputs() -> None:
    x = np.array([1e-10, -1e-10, 3e-8], dtype=np.float32)
    np.testing.assert_allclose(run_op("expm1", [x]), x, rtol=1e-6)
    np.testing.assert_allclose(run_op("log1p", [x]), x, rtol=1e-6)


def test_atan2_quadrants_and_signed_zeros_match_torch() -> None:
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.5], dtype=np.float32)
    a, b = np.meshgrid(v, v)
    got = run_op("atan2", [a, b])
    want = from_torch(torch.atan2(to_torch(a), to_torch(b)))
    assert_close(got, want)
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def test_atan2_broadcasts_and_promotes_like_torch() -> None:
    a = sample((3, 1), np.float16, seed=3)
    b = sample((4,), np.float32, seed=4)
    assert_close(run_op("atan2", [a, b]), from_torch(torch.atan2(to_torch(a), to_torch(b))))


@pytest.mark.parametrize("op", ["sin", "atan2"])
def test_integer_inputs_are_refused_by_the_ir(op: str) -> None:
    x = np.arange(3, dtype=np.int32)
    with pytest.raises(ShapeError, match="i32"):
        run_op(op, [x] * (2 if op == "atan2" else 1))
