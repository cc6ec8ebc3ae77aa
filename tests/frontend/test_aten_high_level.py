"""Non-Core ATen ops converted directly on the export path (``diff``, ``new_ones``...), and
graphs that hold only those skip ``run_decompositions``."""

from __future__ import annotations

import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.frontend.decompositions import needs_decomposition
from cuvil_ref.frontend.export_capture import _core_names


class Diff(torch.nn.Module):
    def __init__(self, n: int, dim: int, edges: bool) -> None:
        super().__init__()
        self.n, self.dim, self.edges = n, dim, edges

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.edges:
            pre = torch.ones_like(x.narrow(self.dim, 0, 1))
            return torch.diff(x, n=self.n, dim=self.dim, prepend=pre, append=x * 2)
        return torch.diff(x, n=self.n, dim=self.dim)


@pytest.mark.parametrize(
    "n,dim,edges", [(1, -1, False), (2, 0, False), (1, 1, True), (3, -1, True)]
)
def test_diff_matches_torch(n: int, dim: int, edges: bool) -> None:
    x = torch.randn(4, 6)
    model = Diff(n, dim, edges).eval()
    cm = cuvil.torch.compile(model, example_inputs=(x,), capture="export", cache=False)
    torch.testing.assert_close(cm(x), model(x))


def test_diff_of_bool_is_xor() -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.diff(x > 0)

    x = torch.randn(3, 7)
    cm = cuvil.torch.compile(M().eval(), example_inputs=(x,), capture="export", cache=False)
    assert torch.equal(cm(x), M()(x))


def test_new_factories_take_the_source_dtype() -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return (
                x.new_ones((2, 3)),
                x.new_zeros(4),
                x.new_full((2,), 7),
                x.new_ones((3,), dtype=torch.float32),
            )

    x = torch.arange(5, dtype=torch.int32)
    cm = cuvil.torch.compile(M().eval(), example_inputs=(x,), capture="export", cache=False)
    for got, want in zip(cm(x), M()(x)):
        assert got.dtype == want.dtype
        assert torch.equal(got, want)


def test_dunder_bool_ops_are_not_taken_for_in_place_ops() -> None:
    class M(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.diff(a & b, prepend=a.new_zeros(a.shape[0], 1, dtype=torch.bool))

    a, b = torch.rand(2, 5) > 0.5, torch.rand(2, 5) > 0.5
    ep = torch.export.export(M(), (a, b))
    assert not needs_decomposition(ep.graph, _core_names())
    cm = cuvil.torch.compile(M().eval(), example_inputs=(a, b), capture="export", cache=False)
    assert torch.equal(cm(a, b), M()(a, b))


def test_in_place_ops_still_take_decomposition() -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x.clone()
            y.add_(1.0)
            return y

    ep = torch.export.export(M(), (torch.randn(3),))
    assert needs_decomposition(ep.graph, _core_names())
