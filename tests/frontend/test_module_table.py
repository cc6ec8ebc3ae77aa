"""MODULE_TABLE: each module the fx capture keeps as a leaf converts with its hyperparameters
and computes what the module computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.frontend.module_table import MODULE_TABLE

CASES = [
    nn.Linear(8, 4),
    nn.LayerNorm(8, eps=1e-3),
    nn.GELU(approximate="tanh"),
    nn.Hardtanh(-0.5, 0.25),
    nn.LeakyReLU(0.2),
    nn.ELU(0.5),
    nn.Softplus(2.0, 3.0),
    nn.Softmax(dim=0),
    nn.LogSoftmax(dim=1),
    nn.Softsign(),
    nn.Mish(),
    nn.Flatten(0, 1),
]


@pytest.mark.parametrize("module", CASES, ids=lambda m: type(m).__name__)
def test_module_converts_with_its_hyperparameters(module: nn.Module) -> None:
    assert type(module) in MODULE_TABLE
    torch.manual_seed(0)
    model = nn.Sequential(module).eval()
    x = torch.randn(3, 8) * 3
    ir = torch_to_cuvilir(model, example_inputs=(x,), capture="fx")
    (got,) = cuvil.interpret(ir, [x.numpy()])
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
