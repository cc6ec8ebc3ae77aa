"""Rearranging converters (cuvil_ref/frontend/aten/shapes.py) through ``cuvil.torch.compile``
against eager: repeat (more repeats than dims, zero repeats, a dynamic batch), flip, diagonal
and copy."""

from __future__ import annotations

import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError
from tests.frontend.aten._compare import matches_eager

X = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("reps", [(1, 1, 1), (2, 1, 3), (2, 2, 1, 1), (3, 0, 1), (1, 2, 3, 2)])
def test_repeat(reps: tuple[int, ...]) -> None:
    matches_eager(lambda x: x.repeat(*reps), X)
    matches_eager(lambda x: x.repeat(*reps), X > 5)


def test_repeat_of_a_rank0_tensor() -> None:
    matches_eager(lambda x: x.repeat(3, 2), torch.tensor(1.5))


def test_repeat_with_a_dynamic_batch_serves_other_batches() -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.repeat(1, 2, 3)

    cm = cuvil.torch.compile(M().eval(), example_inputs=(X,), dynamic_batch=True, cache=False)
    for batch in (1, 3, 5):
        x = torch.randn(batch, 3, 4)
        torch.testing.assert_close(cm(x), x.repeat(1, 2, 3))


def test_flip_and_diagonal() -> None:
    matches_eager(lambda x: torch.flip(x, (0, 2)), X)
    matches_eager(lambda x: torch.fliplr(x), X)
    matches_eager(lambda x: torch.diagonal(x, 1, 1, 2), X)
    matches_eager(lambda x: torch.diagonal(x, -1, -1, 0), X.to(torch.int16))


def test_copy_broadcasts_and_casts_into_self() -> None:
    def fn(x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        y = torch.zeros_like(x, dtype=torch.int32) + x.to(torch.int32)
        y.copy_(src)
        return y

    matches_eager(fn, X, torch.arange(4, dtype=torch.float32) * 1.5)


class _NarrowAt(torch.nn.Module):
    def forward(self, x: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        return torch.narrow(x, 1, start, 2)


@pytest.mark.parametrize("start", [0, 1, -2])
def test_narrow_with_a_tensor_start_runs_with_the_default_capture(start: int) -> None:
    # torch.export refuses a tensor start (an unbacked size); capture='auto' falls back to fx,
    # where the window is an index_select of arange(length) + start
    cm = cuvil.torch.compile(_NarrowAt().eval(), example_inputs=(X, torch.tensor(0)), cache=False)
    got = cm(X, torch.tensor(start))
    torch.testing.assert_close(got, torch.narrow(X, 1, torch.tensor(start), 2))


def test_narrow_past_the_end_is_an_error_at_run_time() -> None:
    cm = cuvil.torch.compile(_NarrowAt().eval(), example_inputs=(X, torch.tensor(0)), cache=False)
    with pytest.raises(CuvilError, match="out of range"):
        cm(X, torch.tensor(2))
