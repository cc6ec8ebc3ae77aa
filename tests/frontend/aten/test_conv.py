"""aten.convolution: 1-d onto conv2d, 2-d onto conv2d, 3-d onto conv3d, transposed onto
conv_transpose, unbatched inputs, 'same' padding, groups and output_padding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


@pytest.mark.parametrize("batched", [True, False])
def test_conv1d_runs_as_conv2d(batched: bool) -> None:
    x = torch.randn(*((2,) if batched else ()), 4, 11)
    w, b = torch.randn(6, 2, 3), torch.randn(6)
    ops = compile_and_compare(lambda x: F.conv1d(x, w, b, 2, 1, 2, groups=2), x)
    assert "conv2d" in ops or "fused_conv2d" in ops


def test_conv2d_unbatched_and_same_padding() -> None:
    w = torch.randn(3, 4, 4, 3)
    compile_and_compare(lambda x: F.conv2d(x, w, padding="same"), torch.randn(4, 7, 6))
    compile_and_compare(
        lambda x: F.conv2d(x, w, stride=(2, 1), dilation=2), torch.randn(1, 4, 9, 8)
    )


def test_conv3d() -> None:
    w, b = torch.randn(4, 1, 2, 3, 2), torch.randn(4)
    ops = compile_and_compare(
        lambda x: F.conv3d(x, w, b, (1, 2, 1), 1, (2, 1, 1), groups=2), torch.randn(2, 2, 5, 6, 5)
    )
    assert "conv3d" in ops
    compile_and_compare(lambda x: F.conv3d(x, w[:, :, :1]), torch.randn(1, 4, 3, 3))  # unbatched


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_transposed_convolution(nd: int) -> None:
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    w, b = torch.randn(4, 3, *(3, 2, 2)[:nd]), torch.randn(6)
    x = torch.randn(2, 4, *(5, 4, 3)[:nd])
    ops = compile_and_compare(lambda x: fn(x, w, b, 2, 1, 1, groups=2, dilation=1), x)
    assert "conv_transpose" in ops
    compile_and_compare(lambda x: fn(x, w, b, 2, 1, 1, groups=2), x[0])  # unbatched
