"""Pooling converters: max pools with their indices (a real output), 1-d pools through 2-d
ones, 3-d pools, integer average pools, and the global ceil_mode pool regression."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


def test_max_pool_indices_are_computed_only_when_read() -> None:
    x = torch.randn(2, 3, 9, 8)
    ops = compile_and_compare(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    assert "max_pool_with_indices" in ops and "max_pool2d" not in ops
    ops = compile_and_compare(lambda x: F.max_pool2d(x, 3, 2, 1), x)
    assert "max_pool_with_indices" not in ops


def test_1d_and_3d_pools() -> None:
    x1, x3 = torch.randn(2, 3, 11), torch.randn(1, 2, 5, 6, 7)
    compile_and_compare(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), x1)
    compile_and_compare(lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), x1)
    compile_and_compare(lambda x: F.adaptive_avg_pool1d(x, 4), x1)
    compile_and_compare(lambda x: F.max_pool3d(x, 2, return_indices=True, ceil_mode=True), x3)
    compile_and_compare(lambda x: F.max_pool3d(x, (2, 3, 2), 1, 1, dilation=(1, 2, 1)), x3)
    compile_and_compare(lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False), x3)
    compile_and_compare(lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), x3)


def test_integer_average_pool() -> None:
    x = torch.randint(-50, 50, (1, 2, 6, 7))
    compile_and_compare(lambda x: F.avg_pool2d(x, 2, divisor_override=3), x)


def test_global_avg_pool_with_ceil_mode_kernel_larger_than_input() -> None:
    """Regression (issue 11): torch accepts AvgPool2d(kernel, ceil_mode=True) over a smaller
    input (a clipped global pool); Cuvil refused it."""
    pool = torch.nn.AvgPool2d(7, ceil_mode=True)
    compile_and_compare(pool, torch.randn(1, 8, 5, 5))
    compile_and_compare(torch.nn.MaxPool2d(4, ceil_mode=True), torch.randn(1, 2, 3, 3))
