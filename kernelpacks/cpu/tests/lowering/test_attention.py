"""Attention scores folded into softmax (lowering.attention): which chains fold, and the
results against the interpreter."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from cuvil_kernels_cpu.executable import CpuExecutable
from torch import nn
from torch.nn import functional as F

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes import plan_memory


class Attention(nn.Module):
    def __init__(self, body: object) -> None:
        super().__init__()
        self.body = body

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.body(q, k, v)  # type: ignore[operator, no-any-return]


class MaskedAttention(Attention):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,  # type: ignore[override]
                m: torch.Tensor) -> torch.Tensor:  # fmt: skip
        return self.body(q, k, v, m)  # type: ignore[operator, no-any-return]


def _sdpa_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _sdpa_bool_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    mask = torch.ones(7, 7, dtype=torch.bool)  # keeps every score: dropped
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _div_and_computed_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           m: torch.Tensor) -> torch.Tensor:  # fmt: skip
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = s.masked_fill(m < 0, float("-inf"))  # m [S, S]: broadcast over batch and heads
    return torch.log_softmax(s, dim=-1) @ v


def _padding_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  m: torch.Tensor) -> torch.Tensor:  # fmt: skip
    s = (q @ k.transpose(-1, -2)) * 0.25
    s = torch.where(m[:, None, None, :] > 0, s, torch.tensor(-1e4))  # [B, 1, 1, S]: not folded
    return torch.softmax(s, dim=-1) @ v


def _scaled_twice_used(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = (q @ k.transpose(-1, -2)) * 0.25
    return torch.softmax(s, dim=-1) @ v + s.sum(-1, keepdim=True)


def _capture(body: object, args: tuple[torch.Tensor, ...]) -> Graph:
    model = Attention(body) if len(args) == 3 else MaskedAttention(body)
    return torch_to_cuvilir(model.eval(), example_inputs=args).graph


def _run(graph: Graph, xs: list[np.ndarray]) -> tuple[np.ndarray, list[str], dict]:
    ex = CpuExecutable(graph, {"threads": 2}, plan_memory(graph))
    got = ex.run(xs)[0]
    comp = next(iter(ex._compiled.values()))
    return got, [s.op for s in comp.program.steps], comp.program.choices


CASES = [
    # (body, extra input shape or None, ops that must be gone, ops that must stay)
    (_sdpa_causal, None, {"mul", "where"}, set()),
    (_sdpa_bool_mask, None, {"mul", "where"}, set()),
    (_div_and_computed_mask, (7, 7), {"div", "where"}, set()),
    (_padding_mask, (2, 7), set(), {"mul", "where"}),  # the mul feeds the unfolded where
    (_scaled_twice_used, None, set(), {"mul"}),
]


@pytest.mark.parametrize(("body", "extra", "gone", "kept"), CASES,
                         ids=[c[0].__name__ for c in CASES])  # type: ignore[attr-defined]
def test_folds_and_matches_the_interpreter(body: object, extra: tuple[int, ...] | None,
                                           gone: set[str], kept: set[str]) -> None:  # fmt: skip
    torch.manual_seed(0)
    args = [torch.randn(2, 3, 7, 8) * 3 for _ in range(3)]
    if extra is not None:
        args.append(torch.randn(*extra))
    graph = _capture(body, tuple(args))
    ops = {n.op for n in graph.nodes}
    assert gone <= ops and kept <= ops  # the capture has the chain this case is about
    xs = [a.numpy() for a in args]
    got, steps, choices = _run(graph, xs)
    want = interpret(graph, xs)[0]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert not gone & set(steps)
    assert kept <= set(steps)
    folded = [c for c in choices.values() if "folds" in c.get("why", "")]
    assert len(folded) == (1 if gone else 0)
