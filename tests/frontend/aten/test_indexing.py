"""Indexing converters: advanced indexing (relative-position tables, gathers by several
tensors), writes through masks, scatters, and the data-dependent shapes Cuvil refuses."""

from __future__ import annotations

import pytest
import torch

from cuvil_ref.errors import CuvilError
from tests.frontend.aten._compile import compile_and_compare


class RelativePosition(torch.nn.Module):
    """A Swin/T5-style relative position bias: a learned table indexed by a constant buffer."""

    def __init__(self, window: int = 3, heads: int = 2) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        coords = torch.stack(
            torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")
        ).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
        self.register_buffer("index", rel[..., 0] * (2 * window - 1) + rel[..., 1])

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        bias = self.table[self.index.view(-1)].view(9, 9, -1).permute(2, 0, 1)
        return scores + bias


def test_relative_position_table() -> None:
    ops = compile_and_compare(RelativePosition(), torch.randn(1, 2, 9, 9))
    assert ops == ["add"]  # table and index are constants: the gathered bias is folded


def test_advanced_indexing_patterns() -> None:
    x = torch.randn(4, 5, 6)
    i, j = torch.tensor([[0, 3], [2, 1]]), torch.tensor([4, -1])
    compile_and_compare(lambda x, i, j: x[i, :, j], x, i, j)
    compile_and_compare(lambda x, i, j: x[:, i[0], j], x, i, j)
    compile_and_compare(lambda x, i: x[..., i], x, i)


def test_masks_that_write_keep_the_shape() -> None:
    compile_and_compare(
        lambda x, m: x.masked_fill(m, 0.0).index_put((m,), torch.tensor(5.0)),
        torch.randn(4, 3),
        torch.rand(4, 3) > 0.5,
    )
    compile_and_compare(
        lambda x, m: x.index_put((m,), torch.ones(3), accumulate=True),
        torch.randn(4, 3),
        torch.tensor([True, False, True, True]),
    )


def test_writes() -> None:
    x = torch.randn(4, 6)
    idx = torch.tensor([[0, 1, 0], [3, 3, 3]])
    compile_and_compare(lambda x, i: x.scatter_add(0, i, torch.ones(2, 3)), x, idx)
    compile_and_compare(lambda x, i: x.scatter(1, i, 7.0), x, idx)
    compile_and_compare(
        lambda x, i: x.scatter_reduce(0, i, torch.ones(2, 3) * 3, "amax", include_self=False),
        x,
        idx,
    )
    compile_and_compare(lambda x: torch.slice_scatter(x, torch.zeros(4, 2), 1, 1, 5, 2), x)
    compile_and_compare(
        lambda x, m: x.masked_scatter(m, torch.arange(24.0)), x, torch.rand(4, 6) > 0.5
    )


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda x: x[x > 0], "aten.index with a boolean mask"),
        (lambda x: torch.nonzero(x), "aten.nonzero"),
    ],
)
def test_data_dependent_shapes_are_refused_with_the_op_named(fn, match: str) -> None:  # noqa: ANN001
    with pytest.raises(CuvilError, match=match):
        compile_and_compare(fn, torch.randn(3, 4))


def test_index_select_and_gather_of_a_0d_tensor() -> None:
    x = torch.tensor(3.5)
    compile_and_compare(lambda x: torch.index_select(x, 0, torch.tensor([0])), x)
    compile_and_compare(lambda x: torch.gather(x, 0, torch.tensor([0, 0])), x)
    compile_and_compare(lambda x: torch.gather(x, 0, torch.tensor(0)), x)
