"""Models exported by ``torch.onnx.export`` import and match ONNX Runtime's output (the same
ONNX file, the same inputs, in the same test): Cuvil's ResNet-18 and a BERT-like encoder."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

from cuvil_ref import zoo
from cuvil_ref.frontend import onnx_to_cuvilir
from cuvil_ref.interpreter import interpret
from tests.frontend.corpus.models import ENTRIES

ort = pytest.importorskip("onnxruntime")


def export(model: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> bytes:
    """The TorchScript exporter (``dynamo=False``): no onnxscript pass, a few seconds."""
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, dynamo=False, opset_version=17)
    return f.getvalue()


def run_ort(data: bytes, arrays: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), arrays)}
    return session.run(None, feed)


def test_resnet18_matches_onnxruntime() -> None:
    model, _ = zoo.get_model("resnet18")
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    data = export(model.eval(), (x,))
    module = onnx_to_cuvilir(data)
    hist = module.graph.op_histogram()
    assert hist["conv2d"] == 20 and "linear" in hist  # Conv and Gemm(transB) became IR ops
    expected = run_ort(data, [x.numpy()])[0]
    actual = interpret(module, [x.numpy()])[0]
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
    assert np.argmax(actual) == np.argmax(expected)


def test_bert_encoder_matches_onnxruntime() -> None:
    entry = next(e for e in ENTRIES if e.name == "bert-masked")
    bert = entry.build().eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state

    (ids,), kwargs = entry.inputs(0)
    mask = kwargs["attention_mask"]
    assert int(mask.sum()) < mask.numel()  # some positions are masked out
    data = export(Encoder().eval(), (ids, mask))
    module = onnx_to_cuvilir(data)
    assert {"layer_norm", "softmax", "matmul"} <= set(module.graph.op_histogram())
    arrays = [ids.numpy(), mask.numpy()]
    expected = run_ort(data, arrays)[0]
    actual = interpret(module, arrays)[0]
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
