"""Whole models: the pack claims every op of ResNet, MobileNetV2 and BERT-like encoders, and
matches the interpreter (float within tolerance; int8 bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import get_model


def _claimed_entirely(program: object) -> None:
    report = program.report()
    assert report["partitions"]["fallback"] == [], report["partitions"]["fallback"]
    assert [p["target"] for p in report["partitions"]["partitions"]] == ["cpu"]


def _compare(module: object, inputs: list[np.ndarray], opt_level: int, **kw: object) -> None:
    cpu = compile_module(module, "cpu", opt_level=opt_level, cache=False, **kw)
    ref = compile_module(module, "ref", opt_level=opt_level, cache=False, **kw)
    _claimed_entirely(cpu)
    for got, want in zip(cpu.run(inputs), ref.run(inputs), strict=True):
        if kw.get("quantize") == "int8":
            np.testing.assert_array_equal(got, want)
        else:
            scale = max(1.0, float(np.abs(want).max()))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
@pytest.mark.parametrize("opt_level", [0, 2, 3])
def test_cnns_float(name: str, opt_level: int) -> None:
    model, _ = get_model(name)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    _compare(torch_to_cuvilir(model, example_inputs=(x,)), [x.numpy()], opt_level)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_cnns_int8_bit_exact(name: str) -> None:
    model, _ = get_model(name)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(1, 3, 32, 32, generator=gen)
    cal = [torch.randn(1, 3, 32, 32, generator=gen) for _ in range(2)]
    module = torch_to_cuvilir(model, example_inputs=(x,))
    _compare(module, [x.numpy()], 3, quantize="int8", calibration_data=cal)


@pytest.mark.parametrize("name", ["transformer_block", "torch_encoder_layer"])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_zoo_encoders(name: str, opt_level: int) -> None:
    model, shape = get_model(name)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(3))
    capture = "export" if name == "torch_encoder_layer" else "fx"
    _compare(torch_to_cuvilir(model, example_inputs=(x,), capture=capture), [x.numpy()],
             opt_level)  # fmt: skip


@pytest.mark.parametrize("opt_level", [0, 2])
def test_bert_encoder(opt_level: int) -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        vocab_size=200, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(4)
    model = transformers.BertModel(cfg).eval()
    with torch.no_grad():  # non-zero biases and norms, as in a trained model
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    ids = torch.randint(0, 200, (2, 16), generator=torch.Generator().manual_seed(5))
    module = torch_to_cuvilir(model, example_inputs=(ids,), capture="export")
    _compare(module, [ids.numpy()], opt_level)
