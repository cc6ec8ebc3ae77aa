"""Intermediates in one arena carved by the memory plan: same results, fewer bytes, safe offsets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from cuvil_kernels_cuda import plugin

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.ir.types import TensorType
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.passes.memory_plan import plan_memory
from cuvil_ref.plugin.target_spec import TargetSpec


def _chain() -> Graph:
    b = GraphBuilder()
    x = b.input("x", _t((2, 8)))
    w = b.constant("w", np.arange(64, dtype=np.float32).reshape(8, 8) / 50 - 0.6)
    h = b.op("relu", [b.op("linear", [x, w])])
    h = b.op("sigmoid", [b.op("linear", [h, w])])
    h = b.op("add", [h, x])
    return b.build([b.op("tanh", [b.op("linear", [h, w])])])


def _t(shape: tuple[int, ...]) -> TensorType:
    return TensorType(shape, DType.f32)


def _check_runs(
    exe_run: Callable[[list[np.ndarray]], list[np.ndarray]], graph: Graph, rng: np.random.Generator
) -> None:
    for _ in range(2):  # fresh inputs each run: nothing may be stale in the arena
        x = rng.standard_normal((2, 8)).astype(np.float32)
        got = exe_run([x])[0]
        np.testing.assert_allclose(got, interpret(graph, [x])[0], rtol=1e-5, atol=1e-6)


def test_chain_intermediates_share_one_planned_arena(rng: np.random.Generator) -> None:
    prog = compile_module(Module(_chain()), "cuda", opt_level=2, cache=False)
    _check_runs(prog.run, prog.module.graph, rng)
    m = prog.report()["metrics"]
    assert m["arena_values"] >= 3
    assert 0 < m["arena_bytes"] <= m["planned_arena_bytes"]
    assert m["arena_bytes"] < m["arena_naive_bytes"]
    assert m["separate_buffers"] == 2  # the partition input and output


def test_views_and_in_place_writes_follow_the_plan(rng: np.random.Generator) -> None:
    b = GraphBuilder()
    x = b.input("x", _t((2, 8)))
    w = b.constant("w", np.arange(64, dtype=np.float32).reshape(8, 8) / 50 - 0.6)
    h = b.op("linear", [x, w])
    v = b.op("reshape", [h], {"shape": (16,)})  # a view: the same device bytes as h
    r = b.op("relu", [b.op("sigmoid", [v])])  # both written in place over the dying linear output
    g = b.build([b.op("add", [b.op("reshape", [r], {"shape": (2, 8)}), x])])
    plan = plan_memory(g)
    exe = plugin.cuvil_lower_partition(TargetSpec("cuda"), g, {"memory_plan": plan})
    _check_runs(exe.run, g, rng)
    m = exe.metrics()
    assert m["arena_views"] == 2 and m["arena_in_place"] == 2
    assert m["arena_bytes"] <= plan.arena_bytes


def test_without_a_plan_the_kit_plans_the_partition(rng: np.random.Generator) -> None:
    g = _chain()
    exe = plugin.cuvil_lower_partition(TargetSpec("cuda"), g, {})
    _check_runs(exe.run, g, rng)
    m = exe.metrics()
    assert m["planned_arena_bytes"] == plan_memory(g).arena_bytes
    assert m["arena_values"] >= 3 and 0 < m["arena_bytes"] <= m["planned_arena_bytes"]
