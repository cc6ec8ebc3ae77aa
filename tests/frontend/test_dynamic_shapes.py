"""Symbolic sizes through real models: one compile with ``dynamic_batch=True`` serves several
batch sizes."""

from __future__ import annotations

import pytest
import torch

import cuvil_ref as cuvil
from tests.frontend.corpus.models import BY_NAME


@pytest.mark.parametrize("name", ["bert", "vit", "deit"])
def test_one_compile_serves_batch_1_3_8(name: str) -> None:
    entry = BY_NAME[name]
    model = entry.build()
    args, _ = entry.inputs(0)
    cm = cuvil.torch.compile(model, example_inputs=args, dynamic_batch=True, cache=False)
    assert cm.module.inputs[0].type.shape[0] == "batch"
    program = cm.program
    for batch in (1, 3, 8):
        x = torch.cat([args[0]] * 4)[:batch]
        with torch.no_grad():
            want = model(x).last_hidden_state
        got = cm(x).last_hidden_state
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert cm.program is program  # no recompilation
