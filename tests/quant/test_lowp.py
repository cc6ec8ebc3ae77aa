"""quantize="fp16"/"bf16": cast insertion, converted weights, f32 accumulation, per-layer dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.errors import QuantizationError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.quant import quantize_module
from cuvil_ref.quant.lowp import to_low_precision
from cuvil_ref.zoo import get_model


def _linear_graph(w: np.ndarray, b: np.ndarray):  # noqa: ANN202
    gb = GraphBuilder()
    x = gb.input("x", TensorType((2, w.shape[1]), DType.f32))
    y = gb.op("linear", [x, gb.constant("w", w), gb.constant("b", b)])
    return gb.build([gb.op("relu", [y])])


@pytest.mark.parametrize(("mode", "np_dtype"), [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_linear_stores_low_and_accumulates_in_f32(mode: str, np_dtype: object) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 300)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    x = rng.standard_normal((2, 300)).astype(np.float32)
    graph, layers = to_low_precision(_linear_graph(w, b), mode)
    consts = {n: a.dtype for n, a in graph.constants.items()}
    assert set(consts.values()) == {np.dtype(np_dtype)}  # f32 weights are gone
    print("\n".join(str(n) for n in graph.nodes))
    assert [n.op for n in graph.nodes] == ["cast", "linear", "relu", "cast"]
    assert [(x["op"], x["dtype"], x["accumulate"]) for x in layers] == [
        ("linear", mode, "f32"),
        ("relu", mode, None),
    ]
    low = lambda a: a.astype(np_dtype).astype(np.float32)  # noqa: E731
    acc = low(x) @ low(w).T + low(b)  # f32 accumulation of the rounded operands
    want = np.maximum(low(acc), 0)
    np.testing.assert_array_equal(interpret(graph, [x])[0], want)
    assert interpret(graph, [x])[0].dtype == np.float32


def test_unknown_dtype_is_rejected() -> None:
    with pytest.raises(QuantizationError, match="not fp16"):
        to_low_precision(_linear_graph(np.ones((2, 2), np.float32), np.ones(2, np.float32)), "i8")


@pytest.mark.parametrize(("mode", "min_db"), [("fp16", 45.0), ("bf16", 25.0)])
def test_resnet18_low_precision_close_to_fp32(mode: str, min_db: float) -> None:
    model, _ = get_model("resnet18")
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    module = torch_to_cuvilir(model, example_inputs=(x,))
    qmod, report = quantize_module(module, mode, [x])
    assert report["output_sqnr_db"][0] > min_db
    assert {layer["precision"] for layer in report["layers"]} == {mode}
    convs = [layer for layer in report["layers"] if layer["op"] == "conv2d"]
    assert len(convs) == 20 and all(c["accumulate"] == "f32" for c in convs)
    assert "batch_norm" not in {n.op for n in qmod.graph.nodes}  # folded before conversion
    assert qmod.graph.outputs[0].type.dtype == DType.f32


def test_torch_compile_fp16_runs_and_reports() -> None:
    model, _ = get_model("mlp")
    x = torch.randn(4, *get_model("mlp")[1][1:])
    cm = cuvil.torch.compile(model, quantize="fp16", example_inputs=(x,))
    got = cm(x)
    with torch.no_grad():
        want = model(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
    layers = cm.report()["quantization"]["layers"]
    assert layers and all(layer["precision"] == "fp16" for layer in layers)
