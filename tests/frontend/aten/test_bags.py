"""embedding_bag (with max_norm renormalization), F.fold and cdist/pdist through the compiler:
the distance ops follow torch's choice between the direct and the matrix-product algorithm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode: str) -> None:
    w = torch.randn(10, 4)
    idx, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 4])
    ops = compile_and_compare(lambda i, o: F.embedding_bag(i, w, o, mode=mode), idx, offsets)
    assert "embedding_bag" in ops
    bag = torch.nn.EmbeddingBag(10, 4, max_norm=1.0, mode=mode)  # renormalizes used rows
    compile_and_compare(bag, idx.view(2, 4))


def test_fold() -> None:
    compile_and_compare(
        lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=(1, 2)), torch.randn(2, 12, 18)
    )


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
def test_cdist_and_pdist(p: float) -> None:
    compile_and_compare(lambda a, b: torch.cdist(a, b, p), torch.randn(2, 5, 3), torch.randn(4, 3))
    compile_and_compare(lambda a: F.pdist(a, p), torch.randn(6, 3))


def test_cdist_uses_the_matrix_product_where_torch_does() -> None:
    a, b = torch.randn(30, 4), torch.randn(7, 4)  # more than 25 rows: torch uses the GEMM form
    ops = compile_and_compare(lambda a, b: torch.cdist(a, b), a, b)
    assert "matmul" in ops or "fused_matmul" in ops
