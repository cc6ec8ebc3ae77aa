"""The example pack: discovered through its entry point, exact claims, conformance for every op
it claims, and partitions run in one arena laid out by the memory plan."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_conformance import run_suite
from cuvil_kernels_example import plugin
from cuvil_kernels_example.lowering import LOWERINGS

import cuvil_ref as cuvil
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import GraphBuilder, Module, TensorType
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.lowering import compile_module
from cuvil_ref.plugin import TargetSpec

TARGET = plugin.TARGET


def test_the_target_is_installed_and_available() -> None:
    rows = {r["target"]: r for r in cuvil.targets() if r["target"]}
    assert rows[TARGET]["available"] is True
    assert rows[TARGET]["pack"] == TARGET


def test_conformance_for_every_claimed_op() -> None:
    report = run_suite(TARGET, sorted(LOWERINGS), quick=True)
    failures = [(r.id, r.reason) for r in report.results if r.status in ("failed", "error")]
    assert failures == []
    assert report.summary()["passed"] > 0
    assert not {r.op for r in report.results if r.status == "passed"} - set(LOWERINGS)


def _mlp() -> Module:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 4, 4), DType.f32))
    h = b.op("flatten", [x], {"start_dim": 1})
    for i in range(3):
        w = b.constant(f"w{i}", rng.standard_normal((16, 16)).astype(np.float32))
        h = b.op("relu", [b.op("linear", [h, w])])
    y = b.op("exp", [h])  # no example kernel: runs on ref
    return Module(b.build([b.op("add", [y, h])]))


def test_partitions_run_in_the_planned_arena() -> None:
    module = _mlp()
    prog = compile_module(module, TARGET, opt_level=1, cache=False)
    x = np.random.default_rng(1).standard_normal((2, 4, 4)).astype(np.float32)
    for _ in range(2):  # the arena is reused: nothing stale may leak into the next run
        np.testing.assert_allclose(prog.run([x])[0], interpret(module, [x])[0], rtol=1e-5)
    report = prog.report()
    assert [p["target"] for p in report["partitions"]["partitions"]] == [TARGET, "ref", TARGET]
    assert report["partitions"]["fallback"][0]["reason"].startswith(f"op 'exp' has no {TARGET}")
    first = report["memory"]["partitions"][0]
    assert first["in_place"] == 3  # each relu writes over its linear's output
    assert first["planned_peak_bytes"] < first["naive_sum_bytes"]
    assert report["metrics"][f"partition0:{TARGET}"]["arena_bytes"] == (
        first["planned_peak_bytes"]
    )


@pytest.mark.parametrize(
    ("dtype", "reason"),
    [(DType.f16, "dtype f16 of %x is not supported for relu"), (DType.f32, None)],
)
def test_claims_say_why_not(dtype: DType, reason: str | None) -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((3,), dtype))
    graph = b.build([b.op("relu", [x])])
    answer = plugin.cuvil_supports_node(TargetSpec(TARGET), graph.nodes[0], graph)
    assert answer.supported is (reason is None)
    assert reason is None or answer.reason.startswith(reason)


def test_hooks_answer_only_for_their_target() -> None:
    other = TargetSpec("ref")
    graph = _mlp().graph
    assert plugin.cuvil_target_available(other) is None
    assert plugin.cuvil_supports_node(other, graph.nodes[0], graph) is None
    assert plugin.cuvil_lower_partition(other, graph, {}) is None
