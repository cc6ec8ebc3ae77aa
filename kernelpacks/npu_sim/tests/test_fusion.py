"""Inter-layer fusion (fusion.py): a qadd runs inside the qconv2d/qlinear producing its
operand. Bit-exact, hazard-free under random interleaving, fewer DRAM bytes and cycles than
the unfused pair, and pairs that cannot fuse still run as two layers."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from cuvil_ref import interpret
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import get_model


class Block(nn.Module):
    def __init__(self, c: int = 48, groups: int = 1):
        super().__init__()
        self.a = nn.Conv2d(c, c, 3, padding=1)
        self.b = nn.Conv2d(c, c, 3, padding=1, groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        return torch.relu(x + self.b(y))


def _compile(model: nn.Module, shape: tuple[int, ...], **options: object):  # noqa: ANN202
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    module = torch_to_cuvilir(model.eval(), example_inputs=(torch.from_numpy(x),))
    cal = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    prog = compile_module(module, "npu-v3", quantize="int8", calibration_data=cal, options=options)
    got = prog.run([x])
    assert all(np.array_equal(g, w) for g, w in zip(got, interpret(prog.module, [x]), strict=True))
    (npu,) = [lp for lp in prog.lowered if lp.partition.target == "npu-v3"]
    return npu.executable


def test_conv_and_residual_add_fuse(npu_host) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model = Block()
    fused = _compile(model, (1, 48, 20, 20))
    plain = _compile(model, (1, 48, 20, 20), fuse_residual=False)
    assert [layer.op for layer in fused.layers] == ["qconv2d", "qconv2d+qadd"]
    assert [layer.op for layer in plain.layers] == ["qconv2d", "qconv2d", "qadd"]
    f, p = fused.metrics(), plain.metrics()
    # the conv output's write and re-read disappear: 2 * 48 * 20 * 20 bytes
    assert p["dram_bytes"] - f["dram_bytes"] >= 2 * 48 * 20 * 20
    assert f["cycles"] < p["cycles"]
    _compile(model, (1, 48, 20, 20), sim_mode="random")  # tokens order every access


def test_grouped_conv_runs_as_two_layers(npu_host) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    exe = _compile(Block(groups=4), (1, 48, 12, 12))
    assert [layer.op for layer in exe.layers] == ["qconv2d", "qconv2d", "qadd"]


def test_linear_and_residual_add_fuse_in_a_transformer(npu_host) -> None:  # noqa: ANN001
    model, shape = get_model("transformer_block")
    exe = _compile(model, shape)
    assert [layer.op for layer in exe.layers].count("qlinear+qadd") == 2
