"""Quantization runs as a pass under the pass manager: timed, named, verified, dumped."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import PassError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, TensorType
from cuvil_ref.lowering import compile_module
from cuvil_ref.passes import PassManager
from cuvil_ref.quant.quantize_pass import quantize_pass


def conv_pool_linear() -> Graph:
    """conv -> relu -> max_pool -> flatten -> linear, with its own fixed weights."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 8, 8), DType.f32))
    w = b.constant("w", rng.normal(0, 0.2, (4, 3, 3, 3)).astype(np.float32))
    y = b.op("relu", [b.op("conv2d", [x, w], {"padding": (1, 1, 1, 1)})])
    y = b.op("flatten", [b.op("max_pool2d", [y], {"kernel": (2, 2)})], {"start_dim": 1})
    fc = b.constant("fc", rng.normal(0, 0.1, (5, 64)).astype(np.float32))
    return b.build([b.op("linear", [y, fc])])


def batches(shape: tuple[int, ...], n: int) -> list[tuple[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [(rng.normal(size=shape).astype(np.float32),) for _ in range(n)]


def test_compile_reports_quantize_as_the_first_pass() -> None:
    data = batches((2, 3, 8, 8), 2)
    prog = compile_module(
        Module(conv_pool_linear()), "ref", quantize="int8", calibration_data=data, cache=False
    )
    report = prog.report()
    first = report["passes"][0]
    assert first["pass"] == "quantize[int8]" and first["changed"] and first["nodes"] > 0
    assert report["quantization"]["mode"] == "int8"
    assert prog.module.metadata["quantization"] == "int8"
    assert "qconv2d" in prog.module.graph.op_histogram()


def test_the_pass_is_verified_and_dumped(capsys: pytest.CaptureFixture[str]) -> None:
    qpass, step = quantize_pass("int8", batches((2, 3, 8, 8), 1))
    manager = PassManager([qpass], verify_each=True, dump_after={"quantize[int8]"})
    module, timings = manager.run(Module(conv_pool_linear()))
    assert step.report is not None and step.report["layers"]
    assert "// IR after pass 'quantize[int8]'" in capsys.readouterr().err
    assert timings[0]["pass"] == "quantize[int8]"
    x = batches((2, 3, 8, 8), 1)[0][0]
    assert np.isfinite(interpret(module, [x])[0]).all()


def test_a_quantization_failure_names_the_pass() -> None:
    qpass, _ = quantize_pass("int4")
    with pytest.raises(PassError, match=r"pass 'quantize\[int4\]' failed: .*unknown mode"):
        PassManager([qpass]).run(Module(conv_pool_linear()))
