"""End to end: zoo models captured from torch, quantized to int8 and compiled for npu-v3.

Every node but the float boundary (quantize / dequantize) must run on the NPU, and the compiled
program must equal the reference interpreter on the same quantized module bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.plugin.host import PluginHost

torch = pytest.importorskip("torch")

# name -> small input shape (the CNNs at 32x32 keep the run short)
MODELS = {
    "mlp": (1, 784),
    "digits_cnn": (1, 1, 8, 8),
    "resnet18": (1, 3, 32, 32),
    "mobilenet_v2": (1, 3, 32, 32),
    "resnet50": (1, 3, 32, 32),
}


@pytest.mark.slow  # zoo models up to ResNet-50: the quick run leaves them out
@pytest.mark.parametrize("name", list(MODELS))
def test_zoo_model_int8_bit_exact(npu_host: PluginHost, name: str) -> None:
    from cuvil_ref import interpret
    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.zoo import get_model

    rng = np.random.default_rng(7)
    shape = MODELS[name]
    model, _ = get_model(name)
    x = rng.standard_normal(shape).astype(np.float32)
    calibration = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    module = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(x),))
    program = compile_module(module, "npu-v3", quantize="int8", calibration_data=calibration)
    on_npu = [p for p in program.plan.partitions if p.target == "npu-v3"]
    assert len(on_npu) == 1
    assert {f.op for f in program.plan.fallback} == {"quantize", "dequantize"}
    got = program.run([x])
    want = interpret(program.module, [x])
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    npu = next(lp.executable for lp in program.lowered if lp.partition.target == "npu-v3").metrics()
    assert npu["cycles"] >= npu["roofline_cycles"] > 0
    n_nodes = len(on_npu[0].graph.nodes)
    rows = [r for r in npu["layers"] if r["op"] != "relayout"]
    fused = [r for r in rows if r["op"].endswith("+qadd")]  # one row for two nodes (fusion.py)
    assert len(rows) + len(fused) == n_nodes
