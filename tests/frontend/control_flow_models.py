"""Small torch models with ``torch.cond`` / ``torch.while_loop``, shared by the capture, lowering
and quantization tests of control flow.

* :class:`Gate` -- a data-dependent branch: ``relu(a(x))`` when ``sum(x) > 0``, else ``b(x) * 2``;
* :class:`Refine` -- iterative refinement with an early exit: ``h = h + tanh(lin(h))`` until five
  steps ran or ``max|h|`` passed a bound; returns the step count and ``h``;
* :class:`Heron` -- Heron's square root, looped until converged (a loop-invariant ``x``);
* :class:`FlagGate` -- a branch on a buffer (known at capture: folding removes the branch).

``inputs_for_every_path(model)`` gives inputs that take each path.
"""

from __future__ import annotations

import torch
from torch import nn
from torch._higher_order_ops import while_loop


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(
            x.sum() > 0, lambda v: torch.relu(self.a(v)), lambda v: self.b(v) * 2.0, (x,)
        )


class Refine(nn.Module):
    def __init__(self, bound: float = 4.0) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.bound = bound

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def cond(i: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
            return (i < 5) & (h.abs().max() < self.bound)

        def body(i: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, torch.tanh(self.lin(h)) + h

        return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))


class Heron(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def cond(y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return (y * y - v).abs().max() > 1e-4

        def body(y: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return 0.5 * (y + v / y), v.clone()

        y, _ = while_loop(cond, body, (x + 1.0, x))
        return y


class FlagGate(nn.Module):
    def __init__(self, flag: bool) -> None:
        super().__init__()
        self.register_buffer("flag", torch.tensor([1.0 if flag else -1.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(self.flag.sum() > 0, lambda v: v.tanh(), lambda v: v.relu(), (x,))


def inputs_for_every_path(model: nn.Module) -> list[torch.Tensor]:
    """Inputs of shape (2, 8) that take each path of ``model`` (Gate: both branches; Refine: an
    early exit after a few steps, the step limit, an exit after one step; Heron: short and long
    convergence)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, generator=g)
    if isinstance(model, Refine):
        return [x, x * 0.1, torch.full((2, 8), 3.5)]  # stops early, or after one step
    if isinstance(model, Heron):
        return [x.abs() + 0.5, x.abs() * 50.0 + 1.0]
    return [x.abs(), -x.abs(), x]
