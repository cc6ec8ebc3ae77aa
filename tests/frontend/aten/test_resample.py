"""Interpolation and grid sampling converters: nearest as constant-index gathers, bilinear
with sizes and scale factors, align_corners both ways, grid_sample modes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


@pytest.mark.parametrize("size", [(8, 9), (3, 2)])
def test_nearest_is_a_gather(size: tuple[int, int]) -> None:
    ops = compile_and_compare(lambda x: F.interpolate(x, size=size), torch.randn(2, 3, 5, 6))
    assert set(ops) <= {"index_select"}
    compile_and_compare(
        lambda x: F.interpolate(x, scale_factor=(1.7, 0.5)), torch.randn(1, 2, 5, 6)
    )


@pytest.mark.parametrize("align", [False, True])
def test_bilinear(align: bool) -> None:
    x = torch.randn(1, 2, 6, 7)
    compile_and_compare(lambda x: F.interpolate(x, (9, 4), mode="bilinear", align_corners=align), x)
    compile_and_compare(
        lambda x: F.interpolate(x, scale_factor=2.5, mode="bilinear", align_corners=align), x
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample(mode: str, padding: str) -> None:
    x, g = torch.randn(2, 3, 6, 7), torch.rand(2, 4, 5, 2) * 2.4 - 1.2
    compile_and_compare(lambda x, g: F.grid_sample(x, g, mode, padding, align_corners=False), x, g)
