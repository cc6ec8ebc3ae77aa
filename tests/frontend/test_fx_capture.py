"""torch.fx capture: generic PyTorch code matches eager; weights, provenance and dynamic dims."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils import _pytree as pytree

import cuvil_ref as cuvil
from cuvil_ref.frontend import output_structure, structure, torch_to_cuvilir
from cuvil_ref.zoo import get_model
from tests.frontend.functional_models import CASES, make


def run_and_compare(model: nn.Module, shapes: list[tuple[int, ...]], capture: str) -> None:
    gen = torch.Generator().manual_seed(3)
    xs = [torch.randn(*s, generator=gen) for s in shapes]
    with torch.no_grad():
        want, _ = pytree.tree_flatten(model(*xs))
    module = torch_to_cuvilir(model, example_inputs=tuple(xs), capture=capture)
    got = cuvil.interpret(module, [x.numpy() for x in xs])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.abs(g - w).max() <= 1e-4 * max(np.abs(w).max(), 1.0)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize(("name", "factory", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_generic_models_match_eager(name: str, factory, shapes) -> None:
    run_and_compare(make(factory), shapes, "fx")


def test_weights_are_constants_named_by_parameter_path() -> None:
    model, _ = get_model("resnet18")
    module = torch_to_cuvilir(model, input_shape=(1, 3, 32, 32), capture="fx")
    consts = module.graph.constants
    assert "layer1.0.conv1.weight" in consts
    assert "layer2.0.downsample.1.running_var" in consts
    np.testing.assert_array_equal(consts["fc.weight"], model.fc.weight.detach().numpy())


def test_every_node_has_provenance_with_module_path_and_user_line() -> None:
    model, _ = get_model("transformer_block")
    module = torch_to_cuvilir(model, input_shape=(1, 4, 64), capture="fx")
    for node in module.graph.nodes:
        p = node.provenance
        assert p is not None and p.torch_node and p.source
        assert "transformer_block.py:" in p.source
    linear = [n for n in module.graph.nodes if n.op == "linear"]
    assert [n.provenance.module_path for n in linear] == ["attn.qkv", "attn.proj", "fc1", "fc2"]
    softmax = next(n for n in module.graph.nodes if n.op == "softmax")
    assert softmax.provenance.module_path == "attn"
    assert "forward" in softmax.provenance.source


def test_sequential_identity_and_dropout_are_inlined() -> None:
    model = nn.Sequential(nn.Identity(), nn.Linear(4, 3), nn.Dropout(0.5), nn.ReLU()).eval()
    module = torch_to_cuvilir(model, input_shape=(2, 4))
    assert [n.op for n in module.graph.nodes] == ["linear", "relu"]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name", ["mlp", "digits_cnn", "transformer_block"])
def test_dynamic_batch(name: str, batch: int) -> None:
    model, shape = get_model(name)
    module = torch_to_cuvilir(model, input_shape=shape, capture="fx", dynamic_dims={0: "batch"})
    assert module.inputs[0].type.shape[0] == "batch"
    x = torch.randn(batch, *shape[1:])
    with torch.no_grad():
        want = model(x).numpy()
    (got,) = cuvil.interpret(module, [x.numpy()])
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_size_arithmetic_on_a_dynamic_dim_reshapes_with_the_symbol() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.view(x.size(0), -1) * 2

    module = torch_to_cuvilir(M().eval(), input_shape=(2, 3, 4), dynamic_batch=True)
    reshape = module.graph.nodes[0]
    assert reshape.attrs["shape"] == ("batch", -1)
    assert module.outputs[0].type.shape == ("batch", 12)
    x = np.random.default_rng(0).standard_normal((5, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(cuvil.interpret(module, [x])[0], x.reshape(5, 12) * 2)


def test_output_structure_is_recorded() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor):
            return x + 1, [x * 2, {"y": x - 1}]

    module = torch_to_cuvilir(M().eval(), input_shape=(2,))
    assert structure.rebuild(output_structure(module), [0, 1, 2]) == (0, [1, {"y": 2}])


def test_scalar_constants_take_the_tensor_dtype() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 3 + 0.5

    module = torch_to_cuvilir(M().eval(), input_shape=(2,), dtype=torch.float16)
    assert all(a.dtype == np.float16 for a in module.graph.constants.values())
    assert all(a.shape == () for a in module.graph.constants.values())


@pytest.mark.parametrize("capture", ["fx", "export"])
def test_softsign_is_captured_and_matches_eager(capture: str) -> None:
    """The op added by following docs/ir.md's steps: nn.Softsign and F.softsign."""

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.Softsign()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(x) + torch.nn.functional.softsign(x * 3)

    model = M().eval()
    run_and_compare(model, [(2, 7)], capture)
    module = torch_to_cuvilir(model, input_shape=(2, 7), capture=capture)
    ops = [n.op for n in module.graph.nodes]
    # fx sees the torch calls; export decomposes F.softsign (Python code) into abs, add, div
    assert ops.count("softsign") == 2 if capture == "fx" else {"abs", "div"} <= set(ops)


def test_random_calls_are_refused_not_baked_into_constants() -> None:
    """fx runs ``torch.rand(3)`` (no tensor arguments) at trace time; baking its result into the
    graph would make every call return the same "random" numbers."""

    class M(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.rand(3)

    with pytest.raises(cuvil.CuvilError, match="random numbers on every call"):
        torch_to_cuvilir(M().eval(), input_shape=(2, 3), capture="fx")
