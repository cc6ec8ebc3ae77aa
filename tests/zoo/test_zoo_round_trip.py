"""The text form round-trips exactly for every zoo model, captured and optimized (large constants
are printed by reference and resolved on parse; the comparison covers them bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.ir.graph import Module
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import MODELS, entry, get_model

SMALL = {"resnet18": (1, 3, 32, 32), "resnet50": (1, 3, 32, 32), "mobilenet_v2": (1, 3, 32, 32)}


def _same(a: Module, b: Module) -> None:
    assert str(a) == str(b)
    assert a.graph.nodes == b.graph.nodes
    assert a.graph.inputs == b.graph.inputs and a.graph.outputs == b.graph.outputs
    assert dict(a.metadata) == dict(b.metadata)
    assert list(a.graph.constants) == list(b.graph.constants)
    for name, arr in a.graph.constants.items():
        other = b.graph.constants[name]
        assert arr.dtype == other.dtype and arr.shape == other.shape
        assert arr.tobytes() == other.tobytes()


@pytest.mark.parametrize("name", MODELS)
def test_zoo_text_round_trip(name: str) -> None:
    model, shape = get_model(name)
    x = torch.randn(*SMALL.get(name, shape), generator=torch.Generator().manual_seed(0))
    capture = entry(name).captures[0]
    captured = torch_to_cuvilir(model, example_inputs=(x,), capture=capture)
    optimized = compile_module(captured, "ref", opt_level=3, cache=False).module
    for mod in (captured, optimized):
        text = str(mod)
        assert "dense_resource<" in text  # weights really are printed by reference
        parsed = cuvil.parse(text, constants=dict(mod.graph.constants))
        _same(mod, parsed)
        xn = x.numpy()
        np.testing.assert_array_equal(
            cuvil.interpret(parsed, [xn])[0], cuvil.interpret(mod, [xn])[0]
        )
