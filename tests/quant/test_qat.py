"""QAT: prepare_qat inserts fake-quant, fine-tuning runs, and the compiled int8 model matches the
fake-quant forward within one output quantization step."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.errors import QuantizationError
from cuvil_ref.quant.qat import convert_qat, freeze_qat, prepare_qat
from cuvil_ref.zoo import get_model

pytestmark = pytest.mark.filterwarnings("ignore")


def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data[:256], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return x, torch.tensor(data.target[:256])


def _fine_tuned() -> tuple[torch.nn.Module, torch.Tensor, float]:
    torch.manual_seed(0)
    x, y = _digits()
    model, _ = get_model("digits_cnn")
    qat = prepare_qat(model, (x[:8],))
    opt = torch.optim.Adam(qat.parameters(), lr=3e-3)
    losses = []
    for step in range(6):
        idx = slice(step * 32, step * 32 + 32)
        loss = torch.nn.functional.cross_entropy(qat(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return freeze_qat(qat), x, losses[-1] - losses[0]


def test_prepare_qat_inserts_fake_quant_with_cuvil_scheme() -> None:
    from torch.ao.quantization.fake_quantize import FusedMovingAvgObsFakeQuantize

    model, _ = get_model("digits_cnn")
    qat = prepare_qat(model, (torch.zeros(1, 1, 8, 8),))
    fqs = [m for m in qat.modules() if isinstance(m, FusedMovingAvgObsFakeQuantize)]
    weights = [m for m in fqs if m.qscheme == torch.per_channel_symmetric]
    assert len(weights) == 3  # conv1, conv2, fc
    assert all((m.quant_min, m.quant_max) == (-127, 127) for m in weights)
    acts = [m for m in fqs if m.qscheme == torch.per_tensor_affine]
    assert acts and all((m.quant_min, m.quant_max) == (0, 255) for m in acts)


@pytest.mark.slow
def test_fine_tuning_updates_weights_and_observers() -> None:
    qat, x, _ = _fine_tuned()
    # gradients flowed (straight-through) into the conv weights and the observers moved
    scale = float(qat.activation_post_process_0.scale)
    assert scale != 1.0 and np.isfinite(scale)
    assert qat.conv1.weight.grad is not None and float(qat.conv1.weight.grad.abs().sum()) > 0


@pytest.mark.slow
def test_compiled_int8_matches_fake_quant_forward_within_one_step() -> None:
    qat, x, _ = _fine_tuned()
    batch = x[:64]
    with torch.no_grad():
        expected = qat(batch).numpy()
    cm = cuvil.torch.compile(
        qat, quantize="int8", example_inputs=(batch,), calibration_data=[batch]
    )
    got = cm(batch).numpy()
    out_fq = qat.get_submodule(str(list(qat.graph.nodes)[-1].args[0].target))
    step = float(out_fq.scale)
    assert np.abs(got - expected).max() <= step * 1.0001
    ops = {n.op for n in cm.module.graph.nodes}
    assert not ops & {"conv2d", "linear"}  # every layer runs as an integer op
    report = cm.report()["quantization"]
    assert report["imported_weights"] == 3
    assert report["summary"]["float_fallback"] == 0


def test_convert_qat_uses_the_learned_scales() -> None:
    qat, x, _ = _fine_tuned()
    module, report = convert_qat(qat, (x[:4],))
    nodes = {n.outputs[0].name: n for n in module.graph.nodes}
    quant = next(n for n in nodes.values() if n.op == "quantize")
    fq = qat.activation_post_process_0
    assert quant.attrs["scale"] == (float(fq.scale),)
    assert quant.attrs["zero_point"] == (int(fq.zero_point) - 128,)
    conv = next(n for n in module.graph.nodes if n.op == "qconv2d")
    w = module.graph.constants[conv.inputs[1].name]
    s_w = qat.conv1.weight_fake_quant.scale.numpy()
    assert w.dtype == np.int8 and np.abs(w).max() <= 127
    from cuvil_ref.ops import qarith

    s_in = np.float32(fq.scale.item())
    s_out = np.float32(conv.attrs["out_scale"])
    want = qarith.quantize_multipliers([float(s_in) * float(s) / float(s_out) for s in s_w])
    assert conv.attrs["multiplier"] == tuple(int(m) for m in want[0])


def test_convert_qat_rejects_a_plain_model() -> None:
    model, _ = get_model("digits_cnn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(QuantizationError, match="no enabled fake-quant"):
            convert_qat(model, (torch.zeros(1, 1, 8, 8),))
