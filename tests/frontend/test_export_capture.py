"""torch.export capture: high-level ATen graphs, parameter names, provenance, Dim-based dynamics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.zoo import get_model
from tests.frontend.functional_models import CASES, make
from tests.frontend.test_fx_capture import run_and_compare


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize(("name", "factory", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_generic_models_match_eager(name: str, factory, shapes) -> None:
    run_and_compare(make(factory), shapes, "export")


def test_parameters_become_constants_named_by_path() -> None:
    model, _ = get_model("torch_encoder_layer")
    module = torch_to_cuvilir(model, input_shape=(1, 3, 32), capture="export")
    assert {"self_attn.in_proj_weight", "linear1.weight", "norm2.bias"} <= set(
        module.graph.constants
    )
    assert module.metadata["capture"] == "export"


def test_provenance_names_module_path_and_user_line() -> None:
    model, _ = get_model("transformer_block")
    module = torch_to_cuvilir(model, input_shape=(1, 4, 64), capture="export")
    for node in module.graph.nodes:
        assert node.provenance is not None and node.provenance.torch_node
    linear = [n for n in module.graph.nodes if n.op == "linear"]
    assert [n.provenance.module_path for n in linear] == ["attn.qkv", "attn.proj", "fc1", "fc2"]
    assert all("transformer_block.py:" in n.provenance.source for n in linear)


def test_scaled_dot_product_attention_with_causal_mask() -> None:
    class M(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    run_and_compare(M().eval(), [(1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8)], "export")


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name", ["mlp", "digits_cnn", "transformer_block"])
def test_dynamic_batch_uses_export_dims(name: str, batch: int) -> None:
    model, shape = get_model(name)
    module = torch_to_cuvilir(model, input_shape=shape, capture="export", dynamic_batch=True)
    assert module.inputs[0].type.shape[0] == "batch"
    x = torch.randn(batch, *shape[1:])
    with torch.no_grad():
        want = model(x).numpy()
    (got,) = cuvil.interpret(module, [x.numpy()])
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_inplace_aten_ops_rebind_their_input() -> None:
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            y.relu_()
            return y + 1

    run_and_compare(M().eval(), [(4,)], "export")


def test_dynamic_dim_folded_into_a_product_is_refused_clearly() -> None:
    # nn.MultiheadAttention reshapes to (t, batch * heads, d): IR shapes hold plain symbols only.
    model, shape = get_model("torch_encoder_layer")
    with pytest.raises(cuvil.CuvilError, match="make those dims static"):
        torch_to_cuvilir(model, input_shape=shape, capture="export", dynamic_batch=True)


def test_core_aten_membership_matches_the_listed_opset() -> None:
    from cuvil_ref.frontend.aten.coverage import core_aten_ops
    from cuvil_ref.frontend.export_capture import _CoreAten

    listed = set(core_aten_ops())
    lazy = _CoreAten()
    assert all(name in lazy for name in listed)
    others = {
        f"aten::{qualified[len('aten::') :].partition('.')[0]}"
        for qualified in torch._C._dispatch_get_all_op_names()
        if qualified.startswith("aten::")
    } - listed
    assert others and not any(name in lazy for name in others)
    assert "prims::add" not in lazy and "aten::" not in lazy
