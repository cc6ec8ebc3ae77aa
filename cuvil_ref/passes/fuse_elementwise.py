"""Elementwise fusion: chains of single-use pointwise ops -> one ``fused_elementwise``.

Requires: a verified graph. Ensures: no pointwise op reads the single-use output of another
pointwise op; such chains are one ``fused_elementwise`` node whose ``program`` lists the steps.
A step is a unary elementwise/activation op (with its attributes) or a binary arithmetic op whose
other operand is a one-element constant that does not broadcast the chain's value to a bigger
shape; that constant is written into the step (``mul(rhs=2.0, dtype='f32')``). The fused
reference calls each step's registered reference in order, so results are bit-identical.
"""

from __future__ import annotations

from typing import Any

from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ops import REGISTRY
from cuvil_ref.ops.fused import SCALAR_BINARY, format_step
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.rewrite import Match, Op, Rewriter, Rule, Var, apply_rules

_POINTWISE_CATEGORIES = frozenset({"elementwise", "activation"})
_UNARY = frozenset(
    d.name
    for d in REGISTRY
    if d.category in _POINTWISE_CATEGORIES and d.inputs == ("x",) and d.name != "fused_elementwise"
)


def step_of(node: Node, constants: Any) -> tuple[Value, str] | None:
    """(the chain's operand, the step text) when ``node`` can be a step, else None."""
    if node.op in _UNARY:
        return node.inputs[0], format_step(node.op, dict(node.attrs))
    if node.op not in SCALAR_BINARY or len(node.inputs) != 2:
        return None
    for side, (x, c) in (("rhs", node.inputs), ("lhs", node.inputs[::-1])):
        arr = constants.get(c.name)
        if arr is None or arr.size != 1 or x.name in constants:
            continue
        if node.outputs[0].type.shape != x.type.shape:
            continue
        scalar = arr.reshape(()).item()
        attrs = {side: scalar, "dtype": c.type.dtype.value, **dict(node.attrs)}
        return x, format_step(node.op, attrs)
    return None


def _fuse(m: Match, r: Rewriter) -> Value | None:
    outer = step_of(m.root, m.constants)
    inner_node = m.node("inner")
    if outer is None or outer[0].name != inner_node.outputs[0].name:
        return None
    if inner_node.op == "fused_elementwise":
        x, program = inner_node.inputs[0], inner_node.attrs["program"]
    else:
        inner = step_of(inner_node, m.constants)
        if inner is None:
            return None
        x, program = inner
    layout = m.root.outputs[0].type.layout
    return r.op("fused_elementwise", [x], {"program": f"{program}; {outer[1]}"}, layout=layout)


_INNER = Op(
    frozenset(_UNARY | SCALAR_BINARY | {"fused_elementwise"}),
    name="inner",
    one_use=True,
    exact=False,
)
_OUTER_OPS = frozenset(_UNARY | SCALAR_BINARY)

RULES: tuple[Rule, ...] = (
    Rule("chain", Op(_OUTER_OPS, _INNER, exact=False), _fuse),
    Rule("chain_rhs", Op(SCALAR_BINARY, Var("c", const=True), _INNER), _fuse),
)


def fuse_elementwise(graph: Graph) -> PassResult:
    return apply_rules(graph, RULES)
