"""A small CNN for sklearn's 8x8 handwritten digits (input ``N x 1 x 8 x 8``, 10 classes)."""

from __future__ import annotations

import torch
from torch import nn

INPUT_SHAPE = (1, 1, 8, 8)


class DigitsCNN(nn.Module):
    """conv(1->16) bn relu -> conv(16->32) bn relu -> maxpool -> flatten -> linear(512->10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.fc(self.dropout(x))


def digits_cnn() -> nn.Module:
    return DigitsCNN()
