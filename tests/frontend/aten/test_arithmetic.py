"""Binary elementwise converters (cuvil_ref/frontend/aten/arithmetic.py) through
``cuvil.torch.compile`` against eager: type promotion with scalars in either position, division
rounding modes, integer and promoted ``pow``, bool arithmetic, ``where`` with Python-scalar
branches (a regression: it used to crash with AttributeError), clamp and hardtanh on integers."""

from __future__ import annotations

import pytest
import torch

from cuvil_ref.errors import CuvilError
from tests.frontend.aten._compare import compiled, matches_eager

X = torch.tensor([[-7.5, 7.0, -0.0, 3.25], [2.0, -3.0, 0.5, float("nan")]])
INTS = torch.tensor([[-7, 7, 0, 3], [2, -3, 5, -1]], dtype=torch.int32)
NZ = torch.tensor([[2, -2, 3, -3], [4, 5, -7, 1]], dtype=torch.int32)
MASK = torch.tensor([[True, False, True, False], [False, False, True, True]])


@pytest.mark.parametrize(
    "branches",
    [(0.5, 2.0), (1, 2), (True, False), (0.5, 2), (-1, 3.5)],
    ids=str,
)
def test_where_with_two_python_scalars(branches: tuple) -> None:
    a, b = branches
    matches_eager(lambda m: torch.where(m, a, b), MASK)


def test_where_with_one_scalar_branch_promotes_like_torch() -> None:
    matches_eager(lambda m, x: torch.where(m, x, 2.5), MASK, INTS)  # i32 tensor, float -> f32
    matches_eager(lambda m, x: torch.where(m, 7, x), MASK, INTS)  # stays i32
    matches_eager(lambda m, x: torch.where(m, x, 0.0), MASK, X)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes(mode: str | None) -> None:
    matches_eager(lambda a, b: torch.div(a, b, rounding_mode=mode), INTS, NZ)
    matches_eager(lambda a, b: torch.div(a, b, rounding_mode=mode), X, X.flip(1) + 0.5)
    matches_eager(lambda a: torch.div(a, -2, rounding_mode=mode), INTS)
    matches_eager(lambda a: torch.div(a, 2.5, rounding_mode=mode), INTS)  # promotes to f32


@pytest.mark.parametrize("op", [torch.fmod, torch.remainder])
def test_fmod_and_remainder(op) -> None:
    matches_eager(lambda a, b: op(a, b), INTS, NZ)
    matches_eager(lambda a, b: op(a, b), X, X.flip(0) + 0.25)
    matches_eager(lambda a: op(a, -3), INTS)
    matches_eager(lambda a: op(a, 1.5), INTS)


def test_pow_of_integers_and_promotion() -> None:
    small = torch.tensor([[0, 1, 2, 3], [-2, -1, 4, 5]], dtype=torch.int64)
    matches_eager(lambda a: a**3, small)  # int ** int stays int
    matches_eager(lambda a, b: a**b, small, small.abs())
    matches_eager(lambda e: 2.5**e, small)  # a float raised to an int tensor is a float
    matches_eager(lambda e: 2**e, small.abs())
    matches_eager(lambda a: a**0.5, small.abs())  # int tensor, float exponent -> f32
    matches_eager(lambda x, e: x**e, X, small)


def test_pow_of_an_int_tensor_to_a_negative_int_is_refused_as_in_torch() -> None:
    with pytest.raises(RuntimeError):
        INTS**-1
    with pytest.raises(CuvilError, match="negative power"):
        compiled(lambda a: a**-1, INTS)


def test_bool_arithmetic_is_logical() -> None:
    other = MASK.flip(1)
    matches_eager(lambda a, b: a + b, MASK, other)
    matches_eager(lambda a, b: a * b, MASK, other)
    matches_eager(lambda a, b: torch.maximum(a, b), MASK, other)
    matches_eager(lambda a, b: torch.minimum(a, b), MASK, other)
    matches_eager(lambda a: a + 1, MASK)  # bool + int -> i64


def test_add_sub_with_alpha() -> None:
    matches_eager(lambda a, b: torch.add(a, b, alpha=3), INTS, NZ)
    matches_eager(lambda a, b: torch.sub(a, b, alpha=0.5), X, X)
    matches_eager(lambda a: torch.rsub(a, 2.0, alpha=2), X)


def test_comparisons_promote_before_comparing() -> None:
    matches_eager(lambda a: a < 2.5, INTS)
    matches_eager(lambda a: a == 3, INTS)
    matches_eager(lambda a, b: a >= b, INTS, X)


def test_bitwise_on_integers_and_scalars() -> None:
    matches_eager(lambda a, b: a & b, INTS, NZ)
    matches_eager(lambda a, b: a | b, INTS, NZ.to(torch.int8))
    matches_eager(lambda a: a ^ 5, INTS)
    matches_eager(lambda a: ~a, INTS.to(torch.uint8))
    with pytest.raises(CuvilError, match="bitwise"):
        compiled(lambda a: torch.bitwise_and(a, a), X)


def test_clamp_promotes_and_takes_tensor_bounds() -> None:
    matches_eager(lambda a: torch.clamp(a, 0.5), INTS)  # int tensor, float bound -> f32
    matches_eager(lambda a: torch.clamp(a, -2, 3), INTS)
    matches_eager(lambda a, lo, hi: torch.clamp(a, lo, hi), X, X - 1, X.flip(1))
    matches_eager(lambda a, lo: torch.clamp(a, min=lo), INTS, NZ)
    matches_eager(lambda a: torch.clamp(a, min=float("nan")), X)


def test_hardtanh_on_integers_truncates_the_bounds_like_torch() -> None:
    x = torch.tensor([1, -5, 3, -1, -2], dtype=torch.int8)
    matches_eager(lambda a: torch.nn.functional.hardtanh(a, -1.7, 2.6), x)


class _WhereScalars(torch.nn.Module):
    def forward(self, m: torch.Tensor) -> torch.Tensor:
        return torch.where(m, 0.5, 2.0)


def test_where_with_python_scalars_under_fx_capture_too() -> None:
    import cuvil_ref as cuvil

    cm = cuvil.torch.compile(
        _WhereScalars().eval(), example_inputs=(MASK,), capture="fx", cache=False
    )
    torch.testing.assert_close(cm(MASK), torch.where(MASK, 0.5, 2.0))
