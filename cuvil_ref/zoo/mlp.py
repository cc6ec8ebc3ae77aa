"""The product brief's MLP: 784 -> 128 -> ReLU -> 10, as an ``nn.Sequential``."""

from __future__ import annotations

from torch import nn

INPUT_SHAPE = (1, 784)


def mlp() -> nn.Module:
    """The brief's quick-start model (MNIST-sized input, 10 classes)."""
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
