"""Integer-only int8 transformers: a small encoder trained here on sklearn's digits (each image
row a token) keeps its top-1 accuracy within 1 point of fp32, and the transformer rules emit
integer ops (or keep float where the user asks)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn import functional as F

from cuvil_ref import interpret
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.quant import quantize_module
from cuvil_ref.zoo.encoders import EncoderLayer

FLOAT_BOUNDARY = {"quantize", "dequantize"}


class DigitsTransformer(nn.Module):
    """8 tokens (image rows) of 8 pixels -> width 32, two pre-LN layers, flatten, 10 classes."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.pos = nn.Parameter(0.1 * torch.randn(1, 8, dim))
        self.layers = nn.ModuleList(EncoderLayer(dim, 4, 64, pre_norm=True) for _ in range(2))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(8 * dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).flatten(1))


@pytest.fixture(scope="module")
def trained() -> tuple[nn.Module, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)  # [1797, 8, 8]: rows as tokens
    xtr, xte, ytr, yte = train_test_split(
        x, digits.target, test_size=360, random_state=0, stratify=digits.target
    )
    torch.manual_seed(0)
    model = DigitsTransformer()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    for _ in range(20):  # bounded: 20 epochs of 23 batches
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            F.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
    return model.eval(), xtr, ytr, xte, yte


def test_integer_only_int8_keeps_top1_within_one_point(trained) -> None:  # noqa: ANN001
    model, xtr, _, xte, yte = trained
    with torch.no_grad():
        fp32 = (model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean()
    assert fp32 > 0.9  # the model really learned the task
    mod = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(xte),))
    calibration = [xtr[i : i + 360] for i in range(0, 1080, 360)]
    qmod, report = quantize_module(mod, calibration_data=calibration)
    ops = qmod.graph.op_histogram()
    # integer-only: float appears only at the model's boundary
    assert set(ops) - FLOAT_BOUNDARY <= {
        "qlinear", "qmatmul", "qadd", "qsoftmax", "qlayer_norm", "qlut",
        "reshape", "flatten", "transpose", "permute", "slice",
    }, ops  # fmt: skip
    assert ops["quantize"] == 1 and ops["dequantize"] == 1
    assert {"qsoftmax", "qlayer_norm", "qlut"} <= set(ops)
    assert not report["float_fallback"]
    (logits,) = interpret(qmod, [xte])
    int8 = (logits.argmax(1) == yte).mean()
    assert abs(int8 - fp32) <= 0.01, (fp32, int8)


def test_skip_keeps_the_float_versions(trained) -> None:  # noqa: ANN001
    model, xtr, _, xte, _ = trained
    mod = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(xte[:4]),))
    qmod, report = quantize_module(
        mod, calibration_data=[xtr[:4]], skip=("softmax", "layer_norm", "gelu")
    )
    ops = qmod.graph.op_histogram()
    assert {"softmax", "layer_norm", "gelu"} <= set(ops)
    assert not {"qsoftmax", "qlayer_norm", "qlut"} & set(ops)
    skipped = {x["op"] for x in report["float_fallback"]}
    assert {"softmax", "layer_norm", "gelu"} <= skipped  # (a flatten of a float stays float)


def test_rules_for_split_scalar_division_and_constant_add(trained) -> None:  # noqa: ANN001
    """chunk -> int8 slices; / sqrt(d) changes only the scale (no node); + pos is a qadd with
    the position table quantized per tensor."""
    model, xtr, _, xte, _ = trained
    mod = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(xte[:4]),))
    assert "div" in mod.graph.op_histogram() and "split" in mod.graph.op_histogram()
    qmod, _ = quantize_module(mod, calibration_data=[xtr[:4]])
    ops = qmod.graph.op_histogram()
    assert "div" not in ops and "split" not in ops
    assert ops["slice"] == 3 * 2  # q, k, v in both layers
    adds = [n for n in qmod.graph.nodes if n.op == "qadd"]
    assert any(v.name in qmod.graph.constants for n in adds for v in n.inputs)
