"""Reduction converters (cuvil_ref/frontend/aten/reductions.py) through ``cuvil.torch.compile``
against eager: a fractional ``correction`` for var/std (a regression: it was truncated to an int,
a silent wrong answer), any/all (u8 results, empty inputs, NaN), max/min with indices, cumsum
with a dtype, sort and topk."""

from __future__ import annotations

import pytest
import torch

from tests.frontend.aten._compare import matches_eager

X = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5).sin() * 3


@pytest.mark.parametrize("op", [torch.var, torch.std])
@pytest.mark.parametrize("correction", [1.3, 0.5, 2, 0, -1])
def test_var_std_fractional_correction(op, correction: float) -> None:
    got = matches_eager(lambda x: op(x, correction=correction), X)
    if correction == 1.3:  # the old converter divided by N - 1 instead of N - 1.3
        assert not torch.allclose(got, op(X, correction=1), rtol=1e-3)
    matches_eager(lambda x: op(x, dim=(1,), correction=correction, keepdim=True), X)


def test_var_std_unbiased_spellings() -> None:
    matches_eager(lambda x: torch.var(x, 1, unbiased=False), X)
    matches_eager(lambda x: torch.std(x, unbiased=True), X)


@pytest.mark.parametrize("op", [torch.any, torch.all])
def test_any_all(op) -> None:
    ints = (X > 0).to(torch.uint8) * 3
    matches_eager(lambda x: op(x), ints)  # u8 in, u8 out
    matches_eager(lambda x: op(x, dim=1), X)
    matches_eager(lambda x: op(x, dim=-1, keepdim=True), X > 1)
    matches_eager(lambda x: op(x, dim=0), torch.zeros(0, 3))  # empty: any False, all True
    matches_eager(lambda x: op(x), torch.tensor([0.0, float("nan")]))  # NaN is true


@pytest.mark.parametrize("op", [torch.max, torch.min])
def test_max_min_with_dim_give_values_and_first_indices(op) -> None:
    ties = torch.tensor([[1, 3, 3, 1], [2, 2, 0, 2]])
    matches_eager(lambda x: op(x, dim=1), ties)
    matches_eager(lambda x: op(x, dim=0, keepdim=True), X)
    matches_eager(lambda x: op(x, 1), torch.tensor([[1.0, float("nan"), 3.0, float("nan")]]))
    matches_eager(lambda x: op(x, dim=1), ties > 1)  # bool
    matches_eager(lambda x: op(x), X)
    matches_eager(lambda a, b: op(a, b), X, X.flip(0))


def test_cumsum_dtypes() -> None:
    matches_eager(lambda x: torch.cumsum(x, 1), X)
    matches_eager(lambda x: torch.cumsum(x, 0), (X > 0).to(torch.int8))  # -> i64
    matches_eager(lambda x: torch.cumsum(x, -1, dtype=torch.float32), (X > 0).to(torch.int32))


def test_sort_and_topk() -> None:
    matches_eager(lambda x: torch.sort(x, dim=1, descending=True, stable=True), X.round())
    matches_eager(lambda x: torch.sort(x, stable=True), (X > 0).to(torch.int64))
    matches_eager(lambda x: torch.argsort(x, dim=0, stable=True), X.round())
    matches_eager(lambda x: torch.topk(x, 2, dim=1), X)
    matches_eager(lambda x: torch.topk(x, 3, largest=False), X)


class _Var(torch.nn.Module):
    def __init__(self, std: bool) -> None:
        super().__init__()
        self.std = std

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        op = torch.std if self.std else torch.var
        return op(x, dim=1, correction=1.3)


@pytest.mark.parametrize("std", [False, True])
def test_fractional_correction_under_fx_capture_too(std: bool) -> None:
    import cuvil_ref as cuvil

    cm = cuvil.torch.compile(_Var(std).eval(), example_inputs=(X,), capture="fx", cache=False)
    op = torch.std if std else torch.var
    torch.testing.assert_close(cm(X), op(X, dim=1, correction=1.3))


def test_cumsum_with_a_dtype_accumulates_and_wraps_in_it() -> None:
    x = torch.randint(-100, 100, (3, 40), dtype=torch.int64)
    matches_eager(lambda a: torch.cumsum(a, 1, dtype=torch.int8), x)
    matches_eager(lambda a: torch.cumsum(a, 0, dtype=torch.int32), x)
    matches_eager(lambda a: torch.cumsum(a, 1, dtype=torch.float64), x)
