"""Comparisons, masks and boolean operators capture on both paths and match eager bit for bit."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import cuvil_ref as cuvil
from cuvil_ref.errors import CaptureError


class Masks(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        m = (x > 0) & ~(y <= 0.5)
        z = torch.where(m, x * 2, y)
        return (
            z.masked_fill(x.eq(0), 1.0),
            (x != y).sum(),
            torch.logical_or(x < -1, y > 1),
            x.ge(y) ^ (y > 0),
            torch.isnan(x / y) | torch.isinf(x),
        )


@pytest.mark.parametrize("capture", ["fx", "export"])
def test_masks_match_eager(capture: str) -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    y[0, 0] = 0.0
    x[0, 0] = 0.0  # 0/0 = NaN
    model = Masks().eval()
    cm = cuvil.torch.compile(model, example_inputs=(x, y), capture=capture)
    for got, want in zip(cm(x, y), model(x, y)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got, want)


class IntBitwise(nn.Module):
    def forward(self, x: torch.Tensor):
        return x.int() & 3


def test_bitwise_on_ints_is_refused_clearly() -> None:
    with pytest.raises(CaptureError, match="bool tensors"):
        cuvil.torch.compile(IntBitwise().eval(), example_inputs=(torch.randn(2, 2),), capture="fx")
