from __future__ import annotations

import numpy as np
import pytest

import cuvil_ref as cuvil
from cuvil_ref.errors import TargetError
from cuvil_ref.ir import GraphBuilder, Module, TensorType
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.lowering.partition import partition_graph
from cuvil_ref.plugin.host import PluginHost


def _graph() -> Module:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    r1 = b.op("relu", [x], name="r1")
    e = b.op("exp", [r1], name="e")
    r2 = b.op("relu", [r1], name="r2")  # independent of e: can join r1's partition
    s = b.op("add", [e, r2], name="s")
    r3 = b.op("relu", [s], name="r3")
    return Module(b.build([r3]))


def test_maximal_partitions_and_fallback_reasons(host: PluginHost) -> None:
    mod = _graph()
    plan = partition_graph(mod.graph, host.resolve("toy"), host)
    targets = [p.target for p in plan.partitions]
    # r1 and r2 cluster together although e sits between them in program order
    assert targets == ["toy", "ref", "toy"]
    assert [n.outputs[0].name for n in plan.partitions[0].graph.nodes] == ["r1", "r2"]
    reasons = {f.node: f.reason for f in plan.fallback}
    assert reasons == {"e": "toy runs relu only, not exp", "s": "toy runs relu only, not add"}


def test_fallback_error_lists_nodes(host: PluginHost) -> None:
    mod = _graph()
    with pytest.raises(
        TargetError, match=r"(?s)cannot run 2 node\(s\).*%e = exp: toy runs relu only"
    ):
        partition_graph(mod.graph, host.resolve("toy"), host, fallback="error")


def test_compiled_program_equals_interpreter(host: PluginHost) -> None:
    mod = _graph()
    prog = compile_module(mod, "toy", opt_level=0)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(prog.run([x])[0], cuvil.interpret(mod, [x])[0])
    rep = prog.report()
    assert rep["partitions"]["count"] == 3
    assert rep["runtime"]["transfer_bytes"] > 0
    fut = prog.run_async([x])
    np.testing.assert_array_equal(fut.result(timeout=30)[0], cuvil.interpret(mod, [x])[0])


def test_unavailable_target_refuses_to_compile(host: PluginHost) -> None:
    with pytest.raises(TargetError, match="not available on this machine: no GPU"):
        compile_module(_graph(), "gpu-x")
