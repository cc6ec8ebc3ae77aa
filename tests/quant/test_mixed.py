"""quantize="mixed": per-layer sensitivity, float fallback until the SQNR budget is met."""

from __future__ import annotations

import pytest
import torch

from cuvil_ref.errors import QuantizationError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.quant import quantize_module
from cuvil_ref.zoo import get_model


@pytest.fixture(scope="module")
def resnet() -> tuple[object, list[torch.Tensor]]:
    model, _ = get_model("resnet18")
    gen = torch.Generator().manual_seed(0)
    data = [torch.randn(2, 3, 16, 16, generator=gen) for _ in range(2)]
    return torch_to_cuvilir(model, example_inputs=(data[0],)), data


@pytest.mark.slow
def test_budget_between_int8_and_float_is_met_with_some_fp16_layers(resnet) -> None:  # noqa: ANN001
    module, data = resnet
    # all-int8 SQNR first, then a budget 4 dB above it
    _, base = quantize_module(module, "mixed", data, min_sqnr_db=0.0)
    assert base["kept_in_float"] == []
    assert {x["precision"] for x in base["layers"]} == {"int8"}
    budget = base["all_int8_sqnr_db"] + 4.0
    qmod, report = quantize_module(module, "mixed", data, min_sqnr_db=budget)
    assert report["budget_met"] and report["output_sqnr_db"] >= budget
    precisions = [x["precision"] for x in report["layers"]]
    assert "fp16" in precisions and "int8" in precisions
    kept = set(report["kept_in_float"])
    # the kept layers are the most sensitive ones
    sens = {x["node"]: x["sensitivity_db"] for x in report["layers"] if x["sensitivity_db"]}
    worst_kept = max(sens[k] for k in kept)
    assert sum(1 for k, v in sens.items() if v < worst_kept and k not in kept) == 0
    assert all(x["precision"] == "fp16" for x in report["layers"] if x["node"] in kept)
    ops = {n.op for n in qmod.graph.nodes}
    assert "qconv2d" in ops and "conv2d" in ops


@pytest.mark.slow
def test_fp32_fallback_reaches_any_budget(resnet) -> None:  # noqa: ANN001
    module, data = resnet
    _, report = quantize_module(module, "mixed", data, min_sqnr_db=200.0, fallback_precision="fp32")
    assert report["budget_met"]
    assert "int8" not in {x["precision"] for x in report["layers"] if x["sensitivity_db"]}


def test_mixed_needs_data_and_a_known_fallback(resnet) -> None:  # noqa: ANN001
    module, data = resnet
    with pytest.raises(QuantizationError, match="fallback_precision"):
        quantize_module(module, "mixed", data, fallback_precision="int4")
    with pytest.raises(QuantizationError, match="calibration_data"):
        quantize_module(module, "mixed", None)
