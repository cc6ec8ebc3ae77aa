"""Converters fixed after the full OpInfo coverage run: each case is the kind of sample that was
refused or crashed (0-d squeeze, all-empty cat, int32 and empty gather indices, bool scatters,
fill, select_scatter, an integer fill that wraps)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import cuvil_ref as cuvil


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


def _check(fn: Callable[..., torch.Tensor], *xs: torch.Tensor) -> None:
    model = Fn(fn).eval()
    cm = cuvil.torch.compile(model, example_inputs=xs, cache=False)
    got, want = cm(*xs), model(*xs)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want)


IDX = torch.tensor([[0, 2], [1, 0]])
CASES: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "squeeze-0d": (lambda x: x.squeeze(0), (torch.tensor(3.0),)),
    "cat-all-empty": (lambda a, b: torch.cat([a, b]), (torch.ones(0), torch.ones(0))),
    "gather-i32-index": (
        lambda x, i: torch.gather(x, 1, i),
        (torch.randn(2, 3), IDX.to(torch.int32)),
    ),
    "gather-empty-index": (
        lambda x, i: torch.gather(x, 0, i),
        (torch.randn(5), torch.zeros(2, 0, dtype=torch.int64)),
    ),
    "scatter-add-bool": (
        lambda x, s: x.scatter_add(1, IDX, s),
        (torch.zeros(2, 3, dtype=torch.bool), torch.tensor([[True, False], [True, True]])),
    ),
    "fill-scalar": (lambda x: torch.fill(x, 2.5), (torch.randn(2, 3),)),
    "fill-tensor": (lambda x, v: torch.fill(x, v), (torch.randn(2, 3), torch.tensor(7.0))),
    "select-scatter": (
        lambda x, s: torch.select_scatter(x, s, 1, -1),
        (torch.randn(3, 4), torch.randn(3)),
    ),
    "full-like-wraps": (
        lambda x: torch.full_like(x, -9),
        (torch.zeros(2, 2, dtype=torch.uint8),),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_matches_torch(name: str) -> None:
    fn, xs = CASES[name]
    _check(fn, *xs)
