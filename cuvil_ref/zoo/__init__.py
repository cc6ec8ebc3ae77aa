"""The model zoo: small, from-scratch models used by tests, benchmarks and the demo.

``get_model(name)`` returns ``(model, input_shape)``: the model in eval mode with weights drawn
from a fixed seed (so every call gives the same model), and its default example input shape.
``MODELS`` lists the names; ``ZooEntry.captures`` says which capture paths the model supports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from cuvil_ref.errors import CuvilError
from cuvil_ref.zoo import (
    digits_cnn,
    encoders,
    mlp,
    mobilenet_v2,
    resnet,
    torch_encoder,
    transformer_block,
)


@dataclass(frozen=True)
class ZooEntry:
    """A zoo model: its factory, default input shape, and the capture paths it supports."""

    factory: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    captures: tuple[str, ...] = ("fx", "export")


_ENTRIES: dict[str, ZooEntry] = {
    "mlp": ZooEntry(mlp.mlp, mlp.INPUT_SHAPE),
    "digits_cnn": ZooEntry(digits_cnn.digits_cnn, digits_cnn.INPUT_SHAPE),
    "resnet18": ZooEntry(resnet.resnet18, resnet.INPUT_SHAPE),
    "resnet50": ZooEntry(resnet.resnet50, resnet.INPUT_SHAPE),
    "mobilenet_v2": ZooEntry(mobilenet_v2.mobilenet_v2, mobilenet_v2.INPUT_SHAPE),
    "transformer_block": ZooEntry(
        transformer_block.transformer_block, transformer_block.INPUT_SHAPE
    ),
    "bert_like": ZooEntry(encoders.bert_like, encoders.BERT_INPUT_SHAPE),
    "vit_like": ZooEntry(encoders.vit_like, encoders.VIT_INPUT_SHAPE),
    "torch_encoder_layer": ZooEntry(
        torch_encoder.torch_encoder_layer, torch_encoder.INPUT_SHAPE, captures=("export",)
    ),
}

MODELS: tuple[str, ...] = tuple(_ENTRIES)
SEED = 0


def entry(name: str) -> ZooEntry:
    """The zoo entry called ``name``; the error lists the available models."""
    try:
        return _ENTRIES[name]
    except KeyError:
        raise CuvilError(f"no zoo model {name!r}; available: {', '.join(MODELS)}") from None


def get_model(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    """``(model in eval mode, example input shape)``; weights come from ``torch.manual_seed(0)``."""
    e = entry(name)
    with torch.random.fork_rng():
        torch.manual_seed(SEED)
        model = e.factory()
    return model.eval(), e.input_shape


__all__ = ["MODELS", "SEED", "ZooEntry", "entry", "get_model"]
