"""The README's demo (``python -m cuvil_ref.demo``) at a small shape: ResNet-18 int8 on npu-v3
must stay one npu-v3 partition between the input's quantize and the output's dequantize (a
split leaves layers on the host and drops the simulator's top-level metrics the demo prints)
and bit-exact against the interpreter."""

from __future__ import annotations

import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref import demo


def test_demo_npu_run_is_bit_exact_and_one_partition(capsys: pytest.CaptureFixture) -> None:
    if "npu-v3" not in {r["target"] for r in cuvil.targets() if r["available"]}:
        pytest.skip("the npu_sim kernel pack is not installed")
    with torch.no_grad():
        assert demo.run_npu("resnet18", (1, 3, 64, 64))
    out = capsys.readouterr().out
    assert "partitions: [('ref', 1), ('npu-v3', 32), ('ref', 1)]" in out, out
    assert "bit-exact vs interpreter: True" in out
