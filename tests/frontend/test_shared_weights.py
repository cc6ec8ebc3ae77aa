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


def test_shared_capture_views_the_weights_read_only() -> None:
    net = _net()
    shared = SharedWeights()
    mod = torch_to_cuvilir(net, example_inputs=(X,), capture="export", shared=shared)
    consts = mod.graph.constants
    w = next(a for n, a in consts.items() if n.startswith("fc.weight"))
    assert np.shares_memory(w, net.fc.weight.detach().numpy())
    assert not w.flags.writeable
    assert len(shared) >= 4  # fc.weight, fc.bias, norm.weight, norm.bias (+ offset)


def test_fx_capture_copies_even_when_sharing_is_asked() -> None:
    net = _net()
    shared = SharedWeights()
    mod = torch_to_cuvilir(net, example_inputs=(X,), capture="fx", shared=shared)
    weight = net.fc.weight.detach().numpy()
    assert len(shared) == 0
    assert not any(np.shares_memory(a, weight) for a in mod.graph.constants.values())


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


def test_inference_mode_and_view_tensors_are_not_shared() -> None:
    with torch.inference_mode():
        frozen = torch.randn(3, 4)
    base = torch.randn(4, 3)
    shared = SharedWeights()
    assert shared.view("frozen", frozen) is None  # no version counter to watch
    assert shared.view("t", base.t()) is None  # not contiguous
    assert shared.view("row", base[1:]) is None  # a view: its base may change
    assert len(shared) == 0


def test_bf16_weights_are_viewed() -> None:
    shared = SharedWeights()
    w = torch.randn(3, 4).to(torch.bfloat16)
    array = shared.view("w", w)
    assert array is not None and array.dtype.name == "bfloat16" and not array.flags.writeable
    assert np.shares_memory(array, w.view(torch.int16).numpy())
    np.testing.assert_array_equal(array.astype(np.float32), w.float().numpy())


def test_weights_the_model_writes_itself_are_copied() -> None:
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(10, 4, max_norm=1.0, mode="sum").eval()  # renormalizes rows
    idx = torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]])
    cm = cuvil.torch.compile(bag, example_inputs=(idx,), cache=False)
    want = bag(idx)  # eager writes the weight in place: not a change to the compiled snapshot
    torch.testing.assert_close(cm(idx), want, rtol=1e-5, atol=1e-6)
    weight = bag.weight.detach().numpy()
    assert not any(np.shares_memory(a, weight) for a in cm.module.graph.constants.values())
