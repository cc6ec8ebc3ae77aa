"""Unary converters (cuvil_ref/frontend/aten/unary_math.py) through ``cuvil.torch.compile``
against eager: float math on integer and bool tensors computes in f32, rounding leaves integers
alone, ``round(decimals=)``, ``neg``/``abs`` of u8 and predicates on integers."""

from __future__ import annotations

import pytest
import torch

from cuvil_ref.errors import CuvilError
from tests.frontend.aten._compare import compiled, matches_eager

INTS = torch.tensor([[-3, 0, 2, 9], [1, -1, 4, 100]], dtype=torch.int64)
X = torch.tensor([[-2.5, 0.5, 1.5, -0.0], [float("nan"), float("inf"), 0.125, 7.777]])


@pytest.mark.parametrize("fn", [torch.sin, torch.exp, torch.sqrt, torch.log1p, torch.sigmoid])
def test_float_math_on_ints_and_bools_promotes(fn) -> None:
    matches_eager(fn, INTS)
    matches_eager(fn, INTS > 0)
    matches_eager(fn, INTS.to(torch.uint8))


@pytest.mark.parametrize("fn", [torch.floor, torch.ceil, torch.trunc, torch.round])
def test_rounding(fn) -> None:
    matches_eager(fn, X)
    matches_eager(fn, INTS)  # integers are returned unchanged


@pytest.mark.parametrize("decimals", [2, -1])
def test_round_decimals(decimals: int) -> None:
    matches_eager(lambda x: torch.round(x, decimals=decimals), X * 100)


def test_neg_abs_sign_of_unsigned_and_bool() -> None:
    u = torch.tensor([0, 1, 200, 255], dtype=torch.uint8)
    matches_eager(torch.neg, u)  # wraps
    matches_eager(torch.abs, u)
    matches_eager(torch.sign, u)
    matches_eager(torch.sign, X)
    matches_eager(torch.sign, INTS > 0)
    with pytest.raises(CuvilError, match="bool tensor"):
        compiled(lambda x: torch.neg(x.bool()), u)


def test_predicates_and_bitwise_not_on_integers() -> None:
    matches_eager(torch.isnan, INTS)
    matches_eager(torch.isinf, INTS.to(torch.int16))
    matches_eager(torch.logical_not, INTS)
    matches_eager(torch.bitwise_not, INTS.to(torch.int8))
