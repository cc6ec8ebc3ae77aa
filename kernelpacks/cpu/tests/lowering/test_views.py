"""Transposes read in place by the batched matmul (lowering.views): which become views, and
the results against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cuvil_kernels_cpu.executable import CpuExecutable
from torch import nn

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.passes import plan_memory


class Heads(nn.Module):
    """Attention with its heads split by view + transpose, as BERT's self-attention."""

    def __init__(self, heads: int, dim: int) -> None:
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, s, self.heads, -1).transpose(1, 2)
        k = k.reshape(b, s, self.heads, -1).permute(0, 2, 3, 1)
        v = v.reshape(b, s, self.heads, -1).transpose(1, 2)
        p = torch.softmax((q @ k) * 0.3, dim=-1)
        return self.out((p @ v).transpose(1, 2).reshape(b, s, d))


def _steps(batch: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = Heads(3, 24).eval()
    x = torch.randn(batch, 11, 24)
    graph = torch_to_cuvilir(model, example_inputs=(x,)).graph
    ex = CpuExecutable(graph, {"threads": 2}, plan_memory(graph))
    got = ex.run([x.numpy()])[0]
    comp = next(iter(ex._compiled.values()))
    return [s.op for s in comp.program.steps], got, interpret(graph, [x.numpy()])[0]


@pytest.mark.parametrize("batch", [1, 2])
def test_head_split_transposes(batch: int) -> None:
    ops, got, want = _steps(batch)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    moved = ops.count("transpose") + ops.count("permute")
    if batch == 1:  # q, k, v read in place; the output's transpose (read by a reshape) stays
        assert moved == 1
    else:  # [2, heads] do not fold into one batch axis without a copy: all four copied
        assert moved == 4
