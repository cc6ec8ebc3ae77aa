"""Every zoo model, through every capture path it supports, matches torch eager in fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.zoo import MODELS, entry, get_model

# Small inputs keep the quick run fast; the full-size checks are marked slow.
SMALL = {"resnet18": (1, 3, 32, 32), "resnet50": (1, 3, 32, 32), "mobilenet_v2": (2, 3, 32, 32)}
CASES = [(name, cap) for name in MODELS for cap in entry(name).captures]


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))


def check(name: str, capture: str, shape: tuple[int, ...]) -> None:
    model, _ = get_model(name)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(x).numpy()
    module = torch_to_cuvilir(model, example_inputs=(x,), capture=capture)
    (got,) = cuvil.interpret(module, [x.numpy()])
    assert got.shape == want.shape
    assert rel_error(got, want) <= 1e-4


@pytest.mark.parametrize(("name", "capture"), CASES)
def test_zoo_model_matches_eager(name: str, capture: str) -> None:
    check(name, capture, SMALL.get(name, get_model(name)[1]))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "capture"), [c for c in CASES if c[0] in SMALL])
def test_zoo_model_full_size(name: str, capture: str) -> None:
    check(name, capture, get_model(name)[1])


def test_get_model_is_deterministic_and_in_eval_mode() -> None:
    a, _ = get_model("digits_cnn")
    b, _ = get_model("digits_cnn")
    assert not a.training
    assert torch.equal(a.conv1.weight, b.conv1.weight)


def test_resnet_parameter_paths_follow_torchvision() -> None:
    model, _ = get_model("resnet18")
    names = {n for n, _ in model.named_parameters()}
    assert {
        "conv1.weight",
        "layer1.0.conv1.weight",
        "layer2.0.downsample.0.weight",
        "fc.bias",
    } <= names
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # torchvision's count


def test_unknown_zoo_model_lists_available() -> None:
    with pytest.raises(cuvil.CuvilError, match="available: mlp"):
        get_model("vgg")
