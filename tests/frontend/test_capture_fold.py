"""Capture-time folding: subgraphs that depend only on constants are computed by torch and
become constants (whatever ops they use); the compile report says what was folded."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import cuvil_ref as cuvil


class CausalScores(nn.Module):
    """A causal mask built from arange + cumsum (cumsum on a constant only) and a rotary-style
    table from cos/sin of a constant: none of it depends on the input."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 4, 2).float() / 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        pos = torch.cumsum(torch.ones(t, dtype=torch.long), 0) - 1
        mask = pos[None, :] <= pos[:, None]
        freqs = torch.outer(pos.float(), self.inv_freq)
        table = torch.cat([freqs.cos(), freqs.sin()], -1)
        scores = x @ x.transpose(-1, -2)
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ (x * table)


def test_constant_subgraphs_are_folded_and_reported() -> None:
    model, x = CausalScores().eval(), torch.randn(2, 5, 4)
    cm = cuvil.torch.compile(model, example_inputs=(x,), cache=False)
    torch.testing.assert_close(cm(x), model(x), rtol=1e-5, atol=1e-6)
    folded = cm.report()["folded_at_capture"]
    assert folded["nodes"] >= 5
    assert "aten::cumsum" in folded["ops"] and "aten::cos" in folded["ops"]
    assert any(c["shape"] == [5, 5] for c in folded["constants"])  # the mask
    ops = {n.op for n in cm.module.graph.nodes}
    assert "cumsum" not in ops and "cos" not in ops


def test_input_dependent_nodes_are_not_folded() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.arange(3.0)

    cm = cuvil.torch.compile(M().eval(), example_inputs=(torch.randn(2, 3),), cache=False)
    assert cm.report()["folded_at_capture"]["nodes"] >= 1
    assert [n.op for n in cm.module.graph.nodes] == ["add"]


def test_random_ops_are_never_folded() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.rand(3)

    with pytest.raises(cuvil.CuvilError, match="rand"):
        cuvil.torch.compile(M().eval(), example_inputs=(torch.randn(2, 3),), cache=False)
