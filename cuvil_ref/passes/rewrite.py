"""A small (pattern, replacement) rewrite engine for local graph rewrites.

A :class:`Rule` pairs a pattern tree with a replacement function. Patterns describe a node by op
name(s), an attribute predicate and whether its output may have only one reader, and its inputs
by sub-patterns; leaves are :class:`Var` (any value, optionally required to be a constant)::

    Rule("mul_one", Op("mul", Var("x"), Var("c", const=True), commutative=True),
         lambda m, r: m["x"] if is_all(m.array("c"), 1) and m.same_type("x") else None)

:func:`apply_rules` walks the graph in topological order and tries the rules, in table order, on
every node as a pattern root. Patterns match against the graph as rewritten so far, so chains
collapse in one sweep (``relu(add(conv))`` -> ``fused_conv2d``). A replacement returns the
:class:`Value` that replaces the root's output (building new nodes through the
:class:`Rewriter`, which infers their types from the registry) or ``None`` to decline. The root's
output is renamed to that value everywhere after it; matched interior nodes are left for
dead-code elimination, which runs after every sweep. Sweeps repeat until nothing fires.

Use counts are conservative: a value's readers are counted in the sweep's input graph (graph
outputs count as readers), and new values inherit the count of the value they replace, so a
``one_use`` condition never holds where it should not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import PassError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph, Node, Provenance, Value
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.dce import eliminate_dead_code

#: ``Rewriter.op``'s default: keep the layout inference gives.
_INFERRED: Any = object()

MAX_SWEEPS = 32


@dataclass(frozen=True)
class Var:
    """A leaf: matches any value (a constant when ``const``) and binds it to ``name``."""

    name: str
    const: bool = False


@dataclass(frozen=True)
class Op:
    """Matches a single-output node whose op is one of ``ops`` (a name or a set of names).

    ``inputs``: sub-patterns for the node's first inputs (more inputs are allowed only when
    ``exact=False``); ``where``: a predicate on the node; ``one_use``: the node's output must have
    exactly one reader (needed for interior nodes a replacement makes dead); ``name``: binds the
    node; ``commutative``: a two-input pattern also tries the inputs swapped.
    """

    ops: str | frozenset[str]
    inputs: tuple[Op | Var, ...] = ()
    name: str | None = None
    where: Callable[[Node], bool] | None = None
    one_use: bool = False
    commutative: bool = False
    exact: bool = True

    def __init__(
        self,
        ops: str | frozenset[str] | set[str],
        *inputs: Op | Var,
        name: str | None = None,
        where: Callable[[Node], bool] | None = None,
        one_use: bool = False,
        commutative: bool = False,
        exact: bool = True,
    ) -> None:
        object.__setattr__(
            self, "ops", frozenset({ops}) if isinstance(ops, str) else frozenset(ops)
        )
        object.__setattr__(self, "inputs", tuple(inputs))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "one_use", one_use)
        object.__setattr__(self, "commutative", commutative)
        object.__setattr__(self, "exact", exact)


@dataclass
class Match:
    """What a pattern bound: ``m["x"]`` is a Value, ``m.node("conv")`` a Node."""

    root: Node
    values: dict[str, Value] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Value:
        return self.values[name]

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def array(self, name: str) -> np.ndarray:
        """The constant bound to ``name`` (the pattern must have ``Var(name, const=True)``)."""
        return self.constants[self.values[name].name]

    def is_const(self, value: Value) -> bool:
        return value.name in self.constants


ReplaceFn = Callable[[Match, "Rewriter"], Value | None]


@dataclass(frozen=True)
class Rule:
    """A named (pattern, replacement) pair."""

    name: str
    pattern: Op
    replace: ReplaceFn


class Rewriter:
    """Builds replacement nodes: ``op`` infers types from the registry, ``constant`` adds one."""

    def __init__(
        self,
        builder: GraphBuilder,
        provenance: Provenance | None,
        constants: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._b = builder
        self._provenance = provenance
        self._constants = {} if constants is None else constants
        self.created: list[Node] = []

    def op(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any] | None = None,
        *,
        layout: Any = _INFERRED,
    ) -> Value:
        """Append ``op(inputs)``; ``layout`` (a layout name, or None for none) tags the output
        type, as the value being replaced has it; without it the inferred layout stays."""
        from cuvil_ref.ops import get_op

        opdef = get_op(op)
        types = opdef.infer_types([v.type for v in inputs], opdef.normalize_attrs(attrs))
        tagged = None if layout is _INFERRED else [t.with_layout(layout) for t in types]
        before = len(self._b.nodes)
        out = self._b.op_multi(op, inputs, attrs, provenance=self._provenance, output_types=tagged)
        self.created.extend(self._b.nodes[before:])
        return out[0]

    def constant(self, hint: str, array: np.ndarray) -> Value:
        """A new constant (visible to later matches through the shared constant table)."""
        value = self._b.constant(hint, np.require(array, requirements="C"))
        self._constants[value.name] = np.require(array, requirements="C")
        return value


def match(pattern: Op | Var, value: Value, ctx: _Context, m: Match) -> bool:
    """Try to bind ``pattern`` to ``value``; on failure ``m`` may hold partial bindings."""
    if isinstance(pattern, Var):
        if pattern.const and value.name not in ctx.constants:
            return False
        bound = m.values.get(pattern.name)
        if bound is not None:
            return bound.name == value.name
        m.values[pattern.name] = value
        return True
    node = ctx.producers.get(value.name)
    if node is None or len(node.outputs) != 1 or node.op not in pattern.ops:
        return False
    return _match_node(pattern, node, ctx, m)


def _match_node(pattern: Op, node: Node, ctx: _Context, m: Match) -> bool:
    if node.op not in pattern.ops or len(node.outputs) != 1:
        return False
    if pattern.one_use and ctx.uses.get(node.outputs[0].name, 0) != 1:
        return False
    if pattern.where is not None and not pattern.where(node):
        return False
    n = len(pattern.inputs)
    if len(node.inputs) < n or (pattern.exact and len(node.inputs) != n):
        return False
    orders = [node.inputs[:n]]
    if pattern.commutative and n == 2:
        orders.append((node.inputs[1], node.inputs[0]))
    for inputs in orders:
        saved_values, saved_nodes = dict(m.values), dict(m.nodes)
        if all(match(p, v, ctx, m) for p, v in zip(pattern.inputs, inputs, strict=True)):
            if pattern.name:
                m.nodes[pattern.name] = node
            return True
        m.values, m.nodes = saved_values, saved_nodes
    return False


@dataclass
class _Context:
    producers: dict[str, Node]
    uses: dict[str, int]
    constants: dict[str, np.ndarray]


def count_uses(graph: Graph) -> dict[str, int]:
    """Value name -> number of input slots reading it, plus one per graph output slot."""
    uses: dict[str, int] = {}
    for node in graph.nodes:
        for v in node.inputs:
            uses[v.name] = uses.get(v.name, 0) + 1
    for v in graph.outputs:
        uses[v.name] = uses.get(v.name, 0) + 1
    return uses


def rename_inputs(node: Node, rename: Mapping[str, Value]) -> Node:
    """``node`` with every input found in ``rename`` replaced (the same object if none is)."""
    if not any(v.name in rename for v in node.inputs):
        return node
    return node.with_inputs([rename.get(v.name, v) for v in node.inputs])


def copy_graph_builder(graph: Graph) -> GraphBuilder:
    """A builder that already holds ``graph``'s inputs and constants (names reserved)."""
    b = GraphBuilder()
    for v in graph.inputs:
        b.add_input(v)
    for name, array in graph.constants.items():
        b.add_constant(name, array)
    for node in graph.nodes:
        for v in node.outputs:
            b.reserve(v.name)
    return b


def _sweep(graph: Graph, rules: Sequence[Rule]) -> tuple[Graph, int]:
    b = copy_graph_builder(graph)
    ctx = _Context({}, count_uses(graph), dict(graph.constants))
    rename: dict[str, Value] = {}
    fired = 0
    emitted: list[Node] = []
    for old in graph.nodes:
        node = rename_inputs(old, rename)
        result = _try_rules(node, rules, ctx, b)
        if result is None:
            emitted.append(node)
            ctx.producers.update({v.name: node for v in node.outputs})
            continue
        value, created = result
        fired += 1
        emitted.extend(created)
        for n in created:
            ctx.producers.update({v.name: n for v in n.outputs})
            for v in n.inputs:
                ctx.uses[v.name] = ctx.uses.get(v.name, 0) + 1
        out = node.outputs[0].name
        ctx.uses[value.name] = ctx.uses.get(value.name, 0) + ctx.uses.get(out, 0)
        rename[out] = value
    outputs = tuple(rename.get(v.name, v) for v in graph.outputs)
    new = Graph(graph.inputs, tuple(emitted), outputs, ctx.constants)
    return eliminate_dead_code(new).graph, fired


def _try_rules(
    node: Node, rules: Sequence[Rule], ctx: _Context, b: GraphBuilder
) -> tuple[Value, list[Node]] | None:
    if len(node.outputs) != 1:
        return None
    for rule in rules:
        m = Match(node, constants=ctx.constants)
        if not _match_node(rule.pattern, node, ctx, m):
            continue
        r = Rewriter(b, node.provenance, ctx.constants)
        value = rule.replace(m, r)
        if value is None:
            if r.created:
                raise PassError(f"rewrite rule '{rule.name}' built nodes and then declined")
            continue
        want = node.outputs[0].type
        # layout and quantization tags are annotations (as in the verifier); a rewrite keeps
        # shape and dtype, e.g. two int8 permutes composed into one untagged permute
        if (value.type.shape, value.type.dtype) != (want.shape, want.dtype):
            raise PassError(
                f"rewrite rule '{rule.name}' replaced {node.describe()} (type {want}) by "
                f"%{value.name} of type {value.type}; a rewrite must keep the type"
            )
        return value, r.created
    return None


def apply_rules(graph: Graph, rules: Sequence[Rule], max_sweeps: int = MAX_SWEEPS) -> PassResult:
    """Apply ``rules`` until none fires (dead nodes removed after each sweep)."""
    changed = False
    for _ in range(max_sweeps):
        swept, fired = _sweep(graph, rules)
        if not fired:
            return PassResult(graph, changed)  # the last swept graph equals this one
        graph, changed = swept, True
    names = ", ".join(r.name for r in rules)
    raise PassError(f"rewrite rules ({names}) still fire after {max_sweeps} sweeps: a rule cycles")


def is_all(array: np.ndarray, value: float) -> bool:
    """Every element of ``array`` equals ``value`` (a broadcast constant such as 1 or 0)."""
    return array.size > 0 and bool(np.all(array == value))
