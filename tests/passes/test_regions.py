"""Passes and regions: they recurse into regions, fold a known predicate, and never let a value
cross a region's edge except as an operand."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, Graph, GraphBuilder, TensorType, Value, verify
from cuvil_ref.passes import PASSES, optimize, plan_memory, run_passes
from cuvil_ref.passes.cse import eliminate_common_subexpressions
from cuvil_ref.passes.dce import eliminate_dead_code
from cuvil_ref.passes.fold_constants import fold_constants
from cuvil_ref.passes.regions import in_regions
from tests.ir import _regions as R
from tests.passes._graphs import ir, ops

X = TensorType((2, 3))
BOOL = TensorType((), DType.bool)


def _inputs() -> list[np.ndarray]:
    x = np.abs(np.random.default_rng(3).standard_normal((2, 3))).astype(np.float32) + 0.25
    return [x, -x, 4 * x]


def _same(before: Graph, after: Graph, exact: bool = True) -> None:
    verify(after)
    for x in _inputs():
        for got, want in zip(interpret(after, [x]), interpret(before, [x]), strict=True):
            if exact:
                assert np.array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _known_branch(flag: bool) -> Graph:
    b = GraphBuilder()
    x = b.input("x", X)
    pred = b.constant("flag", np.array(flag))
    then = b.build_region(lambda r, v: r.op("relu", [v], name="t"), [X], ["a"])
    other = b.build_region(lambda r, v: r.op("neg", [v], name="e"), [X], ["b"])
    (y,) = b.cond(pred, then, other, [x], name="y")
    return b.build([b.op("exp", [y], name="out")])


def test_known_predicate_keeps_only_the_branch_it_takes() -> None:
    for flag, op in ((True, "relu"), (False, "neg")):
        g = _known_branch(flag)
        after = run_passes(g, [PASSES["fold_constants"], PASSES["dce"]])
        assert ir(after) == (
            "func @main(%x : f32[2,3]) -> (f32[2,3]) {\n"
            f"  %{'t' if flag else 'e'} : f32[2,3] = {op}(%x)\n"
            f"  %out : f32[2,3] = exp(%{'t' if flag else 'e'})\n"
            "  return %out\n"
            "}\n"
        )
        _same(g, after)


def test_a_predicate_computed_from_constants_is_folded_first() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    pred = b.op("gt", [b.constant("a", np.float32(2)), b.constant("b", np.float32(1))])
    then = b.build_region(lambda r, v: r.op("mul", [v, r.constant("k", np.float32(3))]), [X])
    other = b.build_region(lambda r, v: v, [X])  # returns its parameter: %x after inlining
    (y,) = b.cond(pred, other, then, [x])
    g = b.build([y])
    after = run_passes(g, [PASSES["fold_constants"], PASSES["dce"]])
    assert after.nodes == () and after.outputs == (after.inputs[0],)
    _same(g, after)


def test_constant_operands_sink_into_regions_and_fold_there() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    p = b.input("p", BOOL)
    w = b.constant("w", np.full((2, 3), 4.0, np.float32))
    then = b.build_region(lambda r, v, c: r.op("add", [v, r.op("sqrt", [c])]), [X, X], ["v", "c"])
    other = b.build_region(lambda r, v, c: r.op("sub", [v, c]), [X, X], ["v2", "c2"])
    (y,) = b.cond(p, then, other, [x, w])
    g = b.build([y])
    after = run_passes(g, [PASSES["fold_constants"], PASSES["dce"]])
    (node,) = after.nodes
    assert [v.name for v in node.inputs] == ["p", "x"] and "w" not in after.constants
    then_after = node.regions[0]
    assert ops(then_after) == ["add"] and list(then_after.constants) == ["sqrt"]
    assert float(then_after.constants["sqrt"][0, 0]) == 2.0
    for flag in (True, False):
        x0 = np.ones((2, 3), np.float32)
        assert np.array_equal(interpret(after, [x0, np.array(flag)])[0],
                              interpret(g, [x0, np.array(flag)])[0])  # fmt: skip


def test_a_loop_is_never_run_at_compile_time() -> None:
    """Every operand is a constant, yet the loop stays: folding it could run for ever."""
    g = R.loop_graph()
    loop = g.nodes[0]
    nine = np.full((2, 3), 9.0, np.float32)
    x = Value("x", X)  # now a constant, not an input
    node = loop.with_inputs([loop.inputs[0], x, loop.inputs[2], x])
    built = Graph((), (node,), (node.outputs[1],), {**dict(g.constants), "x": nine})
    after = fold_constants(built).graph
    assert [n.op for n in after.nodes] == ["while"]
    (loop_after,) = after.nodes
    assert [v.name for v in loop_after.inputs] == ["i0", "x", "delta0"]  # the invariant sank
    assert all("bx" in r.constants or "cx" in r.constants for r in loop_after.regions)
    assert np.allclose(interpret(after, [])[0], 3.0)


def test_dce_drops_unused_if_results_and_operands_in_both_branches() -> None:
    b = GraphBuilder()
    x, z = b.input("x", X), b.input("z", X)
    p = b.input("p", BOOL)

    def then(r: GraphBuilder, v: Value, w: Value) -> list[Value]:
        return [r.op("relu", [v]), r.op("exp", [r.op("neg", [w])])]

    def other(r: GraphBuilder, v: Value, w: Value) -> list[Value]:
        return [r.op("neg", [v]), r.op("sigmoid", [w])]

    used, unused = b.cond(p, b.build_region(then, [X, X]), b.build_region(other, [X, X]), [x, z])
    g = b.build([used])
    after = eliminate_dead_code(g).graph
    (node,) = after.nodes
    assert [v.name for v in node.inputs] == ["p", "x"]  # %z fed only the dropped result
    assert [ops(r) for r in node.regions] == [["relu"], ["neg"]]
    assert [len(r.inputs) for r in node.regions] == [1, 1]
    for flag in (True, False):
        args = [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32), np.array(flag)]
        assert [v.name for v in after.inputs] == ["x", "z", "p"]
        assert np.array_equal(interpret(after, args)[0], interpret(g, args)[0])


def test_dce_keeps_what_a_region_returns_and_removes_what_it_does_not() -> None:
    g = R.loop_graph()
    loop = g.nodes[0]
    body = loop.regions[1]
    dead = GraphBuilder()
    for v in body.inputs:
        dead.add_input(v)
    for name, a in body.constants.items():
        dead.add_constant(name, a)
    for n in body.nodes:
        dead.add_node(n)
    dead.op("exp", [body.inputs[1]], name="unused")
    padded = g.replace(nodes=[loop.with_regions([loop.regions[0], dead.build(body.outputs)])])
    after = eliminate_dead_code(padded)
    assert after.changed
    assert after.graph == g


def test_cse_does_not_merge_across_a_region_edge() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    p = b.input("p", BOOL)
    outer = b.op("exp", [x], name="outer")

    def then(r: GraphBuilder, v: Value) -> list[Value]:
        e1 = r.op("exp", [v], name="e1")
        e2 = r.op("exp", [v], name="e2")  # a duplicate inside the region: merged
        return [r.op("add", [e1, e2])]

    other = b.build_region(lambda r, v: r.op("exp", [v], name="e3"), [X])
    region = b.build_region(then, [X])
    (y1,) = b.cond(p, region, other, [x])
    (y2,) = b.cond(p, region, other, [x])  # an equal if (the same regions): merged
    g = b.build([b.op("add", [outer, b.op("add", [y1, y2])])])
    after = run_passes(g, [PASSES["cse"], PASSES["dce"]])
    assert ops(after) == ["exp", "if", "add", "add"]
    then_after = after.nodes[1].regions[0]
    assert ops(then_after) == ["exp", "add"]  # the outer exp of %x stayed outside
    for flag in (True, False):
        args = [np.ones((2, 3), np.float32), np.array(flag)]
        assert np.array_equal(interpret(after, args)[0], interpret(g, args)[0])
    assert eliminate_common_subexpressions(R.branch_graph()).changed is False


@pytest.mark.parametrize("make", [R.branch_graph, R.loop_graph, R.nested_graph])
@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_opt_level_recurses_and_keeps_results(make, level: int) -> None:  # noqa: ANN001
    from cuvil_ref.ir import Module

    g = make()
    after, timings = optimize(Module(g), opt_level=level, verify_each=True)
    assert [t["pass"] for t in timings]
    _same(g, after.graph, exact=level == 1)


def test_fusion_happens_inside_regions() -> None:
    from cuvil_ref.ir import Module

    after, _ = optimize(Module(R.branch_graph()), opt_level=2, verify_each=True)
    then = after.graph.nodes[-1].regions[0]
    assert ops(then) == ["fused_matmul"] and then.nodes[0].attrs["activation"] == "relu"


def test_in_regions_runs_innermost_first() -> None:
    seen: list[int] = []

    def record(graph: Graph):  # noqa: ANN202
        from cuvil_ref.passes.base import PassResult

        seen.append(len(graph.nodes))
        return PassResult(graph, False)

    g = R.nested_graph()
    result = in_regions(record)(g)
    assert not result.changed
    # the while's cond (1 node), then inside its body the if's then and else (1 each), the
    # body itself (4), last the graph (1)
    assert seen == [1, 1, 1, 4, 1]


def test_memory_plan_gives_each_region_its_own_arena() -> None:
    g = R.loop_graph()
    plan = plan_memory(g)
    loop = g.nodes[0].outputs[0].name
    cond, body = plan.regions[loop]
    assert set(body.buffers) == {v.name for n in g.nodes[0].regions[1].nodes for v in n.outputs}
    assert body.arena_bytes > 0 and plan.peak_bytes == plan.arena_bytes + body.arena_bytes
    report = plan.report()
    assert report["regions"][loop][1]["planned_peak_bytes"] == body.arena_bytes
    nested = plan_memory(R.nested_graph())
    (inner_plans,) = nested.regions.values()
    assert len(inner_plans[1].regions) == 1  # the if inside the body has its plans too
