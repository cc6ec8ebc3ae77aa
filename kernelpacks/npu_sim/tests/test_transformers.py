"""Small BERT-like and ViT-like encoders compiled with quantize="int8" for npu-v3: bit-exact
against the interpreter, with (nearly) every node and MAC in npu-v3 partitions. The full-size
models (hidden 256, 4 layers, seq 128; ViT-Tiny geometry) are in
benchmarks/npu_transformers.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cuvil_ref import interpret
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo.encoders import BertLike, VitLike


def _macs(node) -> int:  # noqa: ANN001
    size = math.prod(int(d) for d in node.outputs[0].type.shape)
    if node.op in ("qlinear", "linear", "qmatmul", "matmul"):
        return size * int(node.inputs[0].type.shape[-1])
    if node.op in ("qconv2d", "conv2d"):
        return size * math.prod(int(d) for d in node.inputs[1].type.shape[1:])
    return 0


@pytest.mark.parametrize(
    "factory,shape,node_share",
    [
        (lambda: BertLike(dim=64, layers=2, heads=4, hidden=128), (1, 32, 64), 0.95),
        (
            lambda: VitLike(image=32, patch=8, dim=48, layers=2, heads=3, hidden=96),
            (1, 3, 32, 32),
            0.9,
        ),
    ],
    ids=["bert_like", "vit_like"],
)
def test_encoder_runs_on_the_array(factory, shape, node_share, npu_host) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model = factory().eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    module = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(x),))
    cal = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    program = compile_module(module, "npu-v3", quantize="int8", calibration_data=cal)
    got = program.run([x])
    want = interpret(program.module, [x])
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    nodes = [(lp.partition.target, n) for lp in program.lowered for n in lp.partition.graph.nodes]
    on = [n for t, n in nodes if t == "npu-v3"]
    assert len(on) / len(nodes) >= node_share
    assert {"qsoftmax", "qlayer_norm", "qlut", "qmatmul"} <= {n.op for n in on}
    off = {n.op for t, n in nodes if t != "npu-v3"}
    assert off <= {"quantize", "dequantize", "mean"}, off
    total = sum(_macs(n) for _, n in nodes)
    assert sum(_macs(n) for n in on) / total >= 0.99
    rows = [r for lp in program.lowered if lp.partition.target == "npu-v3"
            for r in lp.executable.metrics()["layers"]]  # fmt: skip
    assert all(r["bound"] in ("compute", "memory", "fill/drain", "none") for r in rows)
