"""The rewrite engine: pattern matching, use conditions, declining, type safety, sweeps."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import PassError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.rewrite import Match, Op, Rule, Var, apply_rules, count_uses, is_all
from tests.passes._graphs import assert_equivalent, f32, ops


def _neg_neg() -> Rule:
    return Rule("neg_neg", Op("neg", Op("neg", Var("x"), one_use=True)), lambda m, r: m["x"])


def _chain(n: int, extra_use: bool = False) -> Graph:
    b = GraphBuilder()
    x = b.input("x", f32(3))
    y = x
    firsts = []
    for _ in range(n):
        y = b.op("neg", [y])
        firsts.append(y)
    outs = [b.op("exp", [y])] + ([firsts[0]] if extra_use else [])
    return b.build(outs)


def test_rule_fires_repeatedly_until_fixpoint() -> None:
    g = _chain(4)
    result = apply_rules(g, [_neg_neg()])
    assert result.changed and ops(result.graph) == ["exp"]
    assert_equivalent(g, result.graph)


def test_one_use_blocks_a_match() -> None:
    g = _chain(2, extra_use=True)
    result = apply_rules(g, [_neg_neg()])
    assert not result.changed and result.graph is g


def test_commutative_patterns_and_const_vars() -> None:
    seen = []

    def record(m: Match, r) -> None:  # noqa: ANN001
        seen.append((m["x"].name, m["c"].name, is_all(m.array("c"), 2)))
        return None

    rule = Rule("mul_c", Op("mul", Var("x"), Var("c", const=True), commutative=True), record)
    b = GraphBuilder()
    x = b.input("x", f32(2))
    c = b.constant("c", np.full(2, 2.0, np.float32))
    g = b.build([b.op("mul", [c, x]), b.op("mul", [x, x])])
    assert not apply_rules(g, [rule]).changed
    assert seen == [("x", "c", True)]


def test_replacement_builds_nodes_with_inferred_types() -> None:
    def double_to_add(m: Match, r):  # noqa: ANN001, ANN202
        return r.op("add", [m["x"], m["x"]])

    rule = Rule("x*2", Op("mul", Var("x"), Var("c", const=True)), double_to_add)
    b = GraphBuilder()
    x = b.input("x", f32(2))
    g = b.build([b.op("mul", [x, b.constant("two", np.float32(2.0))])])
    after = apply_rules(g, [rule]).graph
    assert ops(after) == ["add"] and not after.constants
    assert_equivalent(g, after)


def test_type_changing_replacement_is_rejected() -> None:
    rule = Rule("bad", Op("sum", Var("x"), exact=False), lambda m, r: m["x"])
    b = GraphBuilder()
    x = b.input("x", f32(2, 3))
    g = b.build([b.op("sum", [x], {"axes": (1,)})])
    with pytest.raises(PassError, match="rule 'bad'.*must keep the type"):
        apply_rules(g, [rule])


def test_cycling_rules_are_reported() -> None:
    def flip(m: Match, r):  # noqa: ANN001, ANN202
        return r.op("neg", [r.op("neg", [m["x"]])])

    g = _chain(1)
    with pytest.raises(PassError, match="still fire"):
        apply_rules(g, [Rule("flip", Op("neg", Var("x")), flip)], max_sweeps=3)


def test_count_uses_counts_outputs() -> None:
    g = _chain(2, extra_use=True)
    uses = count_uses(g)
    assert uses["neg"] == 2 and uses["neg_1"] == 1 and uses["exp"] == 1
