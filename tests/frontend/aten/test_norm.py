"""Normalization converters return the statistics torch returns (computed only when read);
batch norm in training mode normalizes with the batch's statistics, as torch."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


def test_layer_and_group_norm_statistics() -> None:
    x = torch.randn(2, 6, 5)
    w, b = torch.randn(6, 5), torch.randn(6, 5)
    compile_and_compare(lambda x: torch.native_layer_norm(x, [6, 5], w, b, 1e-5), x)
    ops = compile_and_compare(lambda x: F.layer_norm(x, [5], None, b[0]), x)  # bias only
    assert ops.count("var") == 0
    compile_and_compare(lambda x: torch.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5), x)
    bias = torch.randn(6)
    compile_and_compare(lambda x: F.group_norm(x, 3, None, bias), x)


def test_batch_norm_training_and_eval() -> None:
    x = torch.randn(4, 3, 5)
    mean, var = torch.randn(3), torch.rand(3) + 0.5
    w, b = torch.randn(3), torch.randn(3)
    compile_and_compare(lambda x: F.batch_norm(x, mean.clone(), var.clone(), w, b, True), x)
    compile_and_compare(lambda x: F.batch_norm(x, mean, var, None, b, False), x)
    compile_and_compare(lambda x: F.batch_norm(x, None, None, w, b, True), x)


def test_deterministic_dropout() -> None:
    x = torch.randn(3, 4)
    compile_and_compare(lambda x: torch.native_dropout(x, 0.0, True), x)
    compile_and_compare(lambda x: torch.native_dropout(x, 1.0, True), x)
    compile_and_compare(lambda x: torch.native_dropout(x, 0.5, False), x)
