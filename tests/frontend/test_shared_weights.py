"""Zero-copy weights: constants view the model's memory, and the compiled module stays a
snapshot (a weight written in place after compile is refused, never silently mixed in)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.errors import WeightsChangedError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.frontend.shared_weights import SharedWeights


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.register_buffer("offset", torch.arange(3.0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.fc(x)) + self.offset


def _net() -> _Net:
    torch.manual_seed(0)
    net = _Net().eval()
    with torch.no_grad():
        net.norm.weight.uniform_(0.5, 1.5)
        net.norm.bias.uniform_(-1, 1)
    return net


X = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("capture", ["export", "fx"])
def test_shared_capture_views_the_weights_read_only(capture: str) -> None:
    net = _net()
    shared = SharedWeights()
    mod = torch_to_cuvilir(net, example_inputs=(X,), capture=capture, shared=shared)
    consts = mod.graph.constants
    w = next(a for n, a in consts.items() if n.startswith("fc.weight"))
    assert np.shares_memory(w, net.fc.weight.detach().numpy())
    assert not w.flags.writeable
    assert len(shared) >= 4  # fc.weight, fc.bias, norm.weight, norm.bias (+ offset)


def test_plain_capture_copies_the_weights() -> None:
    net = _net()
    mod = torch_to_cuvilir(net, example_inputs=(X,), capture="export")
    before = cuvil.interpret(mod, [X.numpy()])[0]
    with torch.no_grad():
        net.fc.weight.mul_(2)
    assert not any(
        np.shares_memory(a, net.fc.weight.detach().numpy()) for a in mod.graph.constants.values()
    )
    np.testing.assert_array_equal(cuvil.interpret(mod, [X.numpy()])[0], before)


@pytest.mark.parametrize(
    "change",
    [
        lambda net: net.fc.weight.mul_(2),
        lambda net: net.load_state_dict(net.state_dict()),
        lambda net: torch.nn.init.zeros_(net.norm.bias),
        lambda net: net.offset.add_(1),
    ],
    ids=["mul_", "load_state_dict", "init", "buffer"],
)
def test_in_place_change_after_compile_is_refused(change) -> None:
    net = _net()
    cm = cuvil.torch.compile(net, example_inputs=(X,), cache=False)
    torch.testing.assert_close(cm(X), net(X), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        change(net)
    with pytest.raises(WeightsChangedError, match="changed in place after compile"):
        cm(X)
    with pytest.raises(WeightsChangedError):
        cm.module  # noqa: B018 -- its constants view the changed memory
    with pytest.raises(WeightsChangedError):
        cm.save("unused.cuvilir")


def test_rebinding_a_parameter_keeps_the_snapshot() -> None:
    net = _net()
    cm = cuvil.torch.compile(net, example_inputs=(X,), cache=False)
    want, eager = cm(X), net(X)
    net.fc.weight = torch.nn.Parameter(torch.zeros(3, 4))
    net.fc.bias.data = torch.ones(3)
    torch.testing.assert_close(cm(X), want, rtol=0, atol=0)
    assert not torch.allclose(net(X), eager)


def test_inference_mode_weights_are_copied() -> None:
    with torch.inference_mode():
        net = _net()
    shared = SharedWeights()
    mod = torch_to_cuvilir(net, example_inputs=(X.clone(),), capture="fx", shared=shared)
    assert len(shared) == 0  # no version counter to watch: copied instead
    w = next(a for n, a in mod.graph.constants.items() if n.startswith("fc.weight"))
    assert not np.shares_memory(w, net.fc.weight.detach().numpy())


def test_bf16_weights_are_viewed() -> None:
    net = _net().to(torch.bfloat16)
    shared = SharedWeights()
    mod = torch_to_cuvilir(net, example_inputs=(X.to(torch.bfloat16),), capture="fx", shared=shared)
    w = next(a for n, a in mod.graph.constants.items() if n.startswith("fc.weight"))
    assert np.shares_memory(w, net.fc.weight.detach().view(torch.int16).numpy())
    assert w.dtype.name == "bfloat16"
