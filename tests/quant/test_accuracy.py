"""INT8 accuracy on real data, side by side with torch.ao's own PTQ (x86 backend).

The figures come from ``benchmarks/quant_accuracy.py`` (which prints them as Markdown at 224x224);
here: the digits CNN and 64x64 ResNet-18 / MobileNetV2.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.filterwarnings("ignore")


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "quant_accuracy.py"
    spec = importlib.util.spec_from_file_location("quant_accuracy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_digits_int8_accuracy_vs_fp32_and_torch_ao() -> None:
    figures = _bench().digits_figures(epochs=5)
    print(figures)
    assert figures["fp32"] > 90.0  # the model really learned the task
    assert abs(figures["cuvil_int8"] - figures["fp32"]) <= 0.5
    assert figures["cuvil_int8"] >= figures["torch_ao_int8"] - 0.3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_zoo_int8_sqnr_vs_torch_ao(name: str) -> None:
    figures = _bench().model_sqnr(name, size=64, batches=2)
    print(name, figures)
    assert figures["cuvil_int8"] >= figures["torch_ao_int8"] - 1.0
