"""Zoo models compiled for ``cuda`` (simulator) against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.interpreter import interpret
from cuvil_ref.lowering.compiler import compile_module

torch = pytest.importorskip("torch")

from cuvil_ref import frontend, zoo  # noqa: E402  (both need torch)

MODELS = ["mlp", "digits_cnn"]


def _module(name: str) -> tuple[object, np.ndarray]:
    model, shape = zoo.get_model(name)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    return frontend.torch_to_cuvilir(model, example_inputs=(x,)), x


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_float_model_matches_interpreter(name: str) -> None:
    module, x = _module(name)
    prog = compile_module(module, "cuda", cache=False)
    report = prog.report()
    assert [p["target"] for p in report["partitions"]["partitions"]] == ["cuda"], report
    got = prog.run([x.numpy()])[0]
    want = interpret(prog.module, [x.numpy()])[0]
    # The documented reduction bound for the longest chain: 2*K*eps*max(1, |want|) + ulp.
    k = 1024
    bound = 2 * k * np.finfo(np.float32).eps * max(1.0, float(np.abs(want).max()))
    assert np.abs(got - want).max() <= bound
    m = report["metrics"]
    assert m["launches_per_run"] >= len(prog.module.graph.nodes) // 2
    # Intermediates live in the planned arena, smaller than one buffer each.
    assert m["arena_values"] >= 1 and m["separate_buffers"] == 2
    assert 0 < m["arena_bytes"] <= max(m["planned_arena_bytes"], m["arena_naive_bytes"])
    if name == "digits_cnn":
        assert m["arena_bytes"] < m["arena_naive_bytes"]


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_int8_model_is_bit_exact(name: str) -> None:
    module, x = _module(name)
    prog = compile_module(module, "cuda", quantize="int8", calibration_data=[(x,)], cache=False)
    ops = {n.op for lp in prog.lowered if lp.partition.target == "cuda"
           for n in lp.partition.graph.nodes}  # fmt: skip
    assert ops & {"qlinear", "qconv2d"}, ops
    got = prog.run([x.numpy()])
    want = interpret(prog.module, [x.numpy()])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)
