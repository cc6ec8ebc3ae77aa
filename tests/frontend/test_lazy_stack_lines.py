"""Stack traces recorded under ``lazy_stack_lines`` are the text torch records without it."""

from __future__ import annotations

import torch
import torch.utils._traceback as torch_tb

from cuvil_ref.frontend.lazy_stack_lines import lazy_stack_lines


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * 2


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x) + x
        return x.softmax(-1)


def _traces(ep: torch.export.ExportedProgram) -> list[str | None]:
    return [n.meta.get("stack_trace") for n in ep.graph.nodes]


def test_recorded_traces_are_unchanged_and_torch_is_restored() -> None:
    net, x = _Net().eval(), torch.randn(2, 8)
    original = torch_tb._extract_symbolized_tb
    want = _traces(torch.export.export(net, (x,)))
    with lazy_stack_lines():
        assert torch_tb._extract_symbolized_tb is not original
        with lazy_stack_lines():  # nested: one swap
            pass
        assert torch_tb._extract_symbolized_tb is not original
        got = _traces(torch.export.export(net, (x,)))
    assert torch_tb._extract_symbolized_tb is original
    assert got == want
    assert sum("in forward" in (t or "") for t in got) >= 6  # the traces name the model's lines
