"""Import of torch.ao-quantized models (x86 QAT fake-quant and converted modules) with their own
scales: Q/DQ capture, lowering to integer ops, agreement with torch."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.quant import quantize_module
from cuvil_ref.quant.qdq import has_qdq, strip_qdq

pytestmark = pytest.mark.filterwarnings("ignore")


class Residual(nn.Module):
    """conv-bn-relu, a residual add, pooling and a linear head: the ops torch.ao quantizes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn(self.conv(x)))
        y = y + self.conv2(y)
        return self.fc(torch.flatten(self.pool(y), 1))


def _data() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(4, 3, 8, 8, generator=gen) for _ in range(3)]


def _model() -> nn.Module:
    torch.manual_seed(0)
    m = Residual()
    m.bn.running_mean.uniform_(-0.2, 0.2)
    m.bn.running_var.uniform_(0.5, 2.0)
    return m.eval()


def test_torch_ao_converted_model_imports_with_its_scales() -> None:
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = "x86"
    data = _data()
    prepared = prepare_fx(copy.deepcopy(_model()), get_default_qconfig_mapping("x86"), (data[0],))
    for batch in data:
        prepared(batch)
    converted = convert_fx(prepared).eval()
    module = torch_to_cuvilir(converted, example_inputs=(data[0],))
    assert has_qdq(module.graph)
    qmod, report = quantize_module(module, "int8", [(b.numpy(),) for b in data])
    ops = [n.op for n in qmod.graph.nodes]
    assert "qconv2d" in ops and "qadd" in ops and "qlinear" in ops
    assert "conv2d" not in ops and "linear" not in ops
    # the first conv's output parameters are torch's (quint8 zero point shifted by 128)
    conv = next(n for n in qmod.graph.nodes if n.op == "qconv2d")
    tconv = converted.conv
    assert conv.attrs["out_scale"] == pytest.approx(float(tconv.scale), rel=1e-7)
    assert conv.attrs["out_zp"] == int(tconv.zero_point) - 128
    for batch in data:
        got = interpret(qmod, [batch.numpy()])[0]
        want = converted(batch).numpy()
        step = float(converted.fc.scale)
        # fbgemm requantizes in float32 and rounds differently: allow two output steps
        assert np.abs(got - want).max() <= 2 * step + 1e-6


def test_torch_x86_qat_fake_quant_with_reduced_range_is_exact() -> None:
    from torch.ao.quantization import get_default_qat_qconfig_mapping
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    from cuvil_ref.quant.qat import freeze_qat

    data = _data()
    qat = prepare_qat_fx(
        copy.deepcopy(_model()).train(), get_default_qat_qconfig_mapping("x86"), (data[0],)
    )
    for batch in data:
        qat(batch)
    freeze_qat(qat)
    module = torch_to_cuvilir(qat, example_inputs=(data[0],))
    # x86 activations use quint8 [0, 127] (reduce_range): an int8 clamp keeps torch's range
    assert any(n.op == "clamp" for n in module.graph.nodes)
    stripped = strip_qdq(module.graph)
    assert all(p.qmax == -1 for p in stripped.activations.values())
    qmod, report = quantize_module(module, "int8", [(b.numpy(),) for b in data])
    assert report["summary"]["float_fallback"] == 0
    out_fq = qat.get_submodule(str(list(qat.graph.nodes)[-1].args[0].target))
    for batch in data:
        with torch.no_grad():
            want = qat(batch).numpy()
        got = interpret(qmod, [batch.numpy()])[0]
        steps = np.rint(np.abs(got - want) / float(out_fq.scale))
        # one-step rounding differences upstream (torch multiplies by 1/scale, accumulates in
        # float) can meet at the 7-bit residual add: allow 2 steps, and mostly exact agreement
        assert steps.max() <= 2 and steps.mean() <= 0.5
    # the captured float graph is the fake-quant forward itself (up to float rounding of the
    # BN fold: torch divides the conv output by the BN factor again)
    fq_out = interpret(module, [data[0].numpy()])[0]
    with torch.no_grad():
        steps = np.rint(np.abs(fq_out - qat(data[0]).numpy()) / float(out_fq.scale))
    assert steps.max() <= 2 and steps.mean() <= 0.5


def test_plain_model_keeps_ptq_path() -> None:
    data = _data()
    module = torch_to_cuvilir(_model(), example_inputs=(data[0],))
    assert not has_qdq(module.graph)
    _, report = quantize_module(module, "int8", [(b.numpy(),) for b in data])
    assert report["observer"] == "minmax"  # the calibrated PTQ report, not the import one
