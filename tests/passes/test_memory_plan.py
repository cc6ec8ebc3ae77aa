"""Memory planning: reuse, in-place (also for fused_elementwise), no overlap of live buffers."""

from __future__ import annotations

import itertools

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.passes.memory_plan import MemoryPlan, plan_memory
from cuvil_ref.passes.pipeline import optimize
from tests.passes._graphs import f32, randn


def _assert_no_overlap(plan: MemoryPlan) -> None:
    roots = [b for b in plan.buffers.values() if b.in_place_of is None and b.view_of is None]
    for a, b in itertools.combinations(roots, 2):
        live_together = not (a.end < b.start or b.end < a.start)
        disjoint = a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset
        assert not live_together or disjoint, f"{a} and {b} overlap while both live"
    for b in plan.buffers.values():
        assert b.offset + b.nbytes <= plan.arena_bytes


def _chain() -> Graph:
    b = GraphBuilder()
    x = b.input("x", f32(1, 4, 8, 8))
    y = x
    for i in range(4):
        y = b.op("conv2d", [y, b.constant(f"w{i}", randn(4, 4, 3, 3))], {"padding": (1, 1, 1, 1)})
        y = b.op("exp", [y])
    return b.build([y])


def test_chain_reuses_buffers_and_works_in_place() -> None:
    plan = plan_memory(_chain())
    assert plan.arena_bytes < plan.naive_bytes
    assert plan.report()["in_place"] == 4  # every exp writes over its conv's output
    _assert_no_overlap(plan)


def test_branches_do_not_overlap() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(16))
    outs = [b.op("exp", [x]) for _ in range(3)]
    s = b.op("add", [b.op("add", [outs[0], outs[1]]), outs[2]])
    plan = plan_memory(b.build([s, outs[0]]))
    _assert_no_overlap(plan)
    assert plan.buffers[outs[0].name].end == 5  # a graph output lives to the end


def test_fused_elementwise_is_in_place_and_fused_conv_is_not() -> None:
    graph = optimize(Module(_chain_with_pointwise_pairs()), opt_level=2)[0].graph
    assert [n.op for n in graph.nodes] == ["fused_conv2d", "fused_elementwise"] * 2
    plan = plan_memory(graph)
    in_place = {b.value for b in plan.buffers.values() if b.in_place_of}
    assert in_place == {n.outputs[0].name for n in graph.nodes if n.op == "fused_elementwise"}
    _assert_no_overlap(plan)


def _chain_with_pointwise_pairs() -> Graph:
    b = GraphBuilder()
    x = b.input("x", f32(1, 4, 6, 6))
    y = x
    for i in range(2):
        z = b.op("conv2d", [y, b.constant(f"w{i}", randn(4, 4, 1, 1))])
        y = b.op("tanh", [b.op("exp", [b.op("add", [z, y])])])  # residual, then a chain
    return b.build([y])


def test_a_view_shares_its_input_buffer_which_lives_as_long_as_the_view() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(4, 8))
    a = b.op("exp", [x], name="a")
    v = b.op("reshape", [a], {"shape": (32,)}, name="v")
    c = b.op("exp", [b.op("neg", [x], name="n")], name="c")  # made while v is still live
    out = b.op("add", [v, b.op("reshape", [c], {"shape": (32,)}, name="cv")], name="out")
    plan = plan_memory(b.build([out]))
    assert plan.buffers["v"].view_of == "a" and plan.buffers["v"].offset == plan.buffers["a"].offset
    assert plan.buffers["a"].end >= plan.buffers["v"].end  # the shared buffer outlives the view
    assert plan.report()["views"] == 2
    _assert_no_overlap(plan)


def test_no_in_place_write_over_a_buffer_a_view_still_reads() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(4, 8))
    a = b.op("exp", [x], name="a")
    v = b.op("reshape", [a], {"shape": (32,)}, name="v")
    r = b.op("relu", [v], name="r")  # v dies here, but a (the same bytes) is read below
    out = b.op("add", [r, b.op("reshape", [a], {"shape": (32,)}, name="w")], name="out")
    plan = plan_memory(b.build([out]))
    assert plan.buffers["r"].in_place_of is None
    assert plan.buffers["r"].offset != plan.buffers["a"].offset
    _assert_no_overlap(plan)


def test_a_view_of_a_graph_input_gets_its_own_buffer() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(4, 8))
    v = b.op("flatten", [x], name="v")
    plan = plan_memory(b.build([b.op("exp", [v], name="e")]))
    assert plan.buffers["v"].view_of is None and "x" not in plan.buffers
