"""Passes and regions: run a pass inside every region, and the rewrites across a region's edge.

A region is a closed graph (``cuvil_ref.ops.control_flow``), so a graph pass is correct inside a
region as it is: :func:`in_regions` applies it to every region, innermost first, then to the
graph itself. The pass manager does that for every pass that does not handle regions itself
(``Pass.handles_regions``). What only a region-aware pass can do lives here:

* :func:`sink_constants` -- an operand that is a constant of the enclosing graph becomes a
  constant of the regions (an ``if``'s operands, a ``while``'s invariants), so folding and
  quantization inside the region see it;
* :func:`inline_region` -- the nodes of a region copied into the enclosing graph with its inputs
  bound to the operands (an ``if`` whose predicate is known becomes its chosen branch);
* :func:`prune_unused` -- an ``if`` drops results nobody reads, and a region op drops operands
  no region reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

import numpy as np

from cuvil_ref.ir.builder import sanitize_name
from cuvil_ref.ir.graph import Graph, Node, Value, constant_type
from cuvil_ref.passes.base import PassFn, PassResult


def in_regions(fn: PassFn) -> PassFn:
    """``fn`` applied to every region of every node (innermost first), then to the graph."""

    def run(graph: Graph) -> PassResult:
        changed = False
        nodes: list[Node] = []
        for node in graph.nodes:
            if node.regions:
                results = [run(region) for region in node.regions]
                if any(r.changed for r in results):
                    node = node.with_regions([r.graph for r in results])
                    changed = True
            nodes.append(node)
        result = fn(graph.replace(nodes=nodes) if changed else graph)
        return PassResult(result.graph, result.changed or changed)

    return run


def sinkable(node: Node) -> range:
    """Indices of the operands that may become region constants: every operand of an ``if``
    but the predicate, a ``while``'s invariants (a carried value changes between iterations)."""
    if node.op == "if":
        return range(1, len(node.inputs))
    if node.op == "while":
        return range(node.attrs["num_carried"], len(node.inputs))
    return range(0)


def sink_constants(node: Node, constants: Mapping[str, np.ndarray]) -> Node:
    """``node`` with every sinkable operand that is a plain constant moved into its regions (the
    region's parameter becomes a region constant of the same name); the same node if none is.

    Every region takes all the operands in order (``if``: all but the predicate), so operand
    ``i`` is parameter ``i - offset`` of each region."""
    offset = 1 if node.op == "if" else 0
    moved = [
        i
        for i in sinkable(node)
        if node.inputs[i].name in constants
        and constant_type(constants[node.inputs[i].name]) == node.inputs[i].type
    ]
    if not moved:
        return node
    regions = []
    for region in node.regions:
        drop = {i - offset for i in moved}
        params = [v for k, v in enumerate(region.inputs) if k not in drop]
        consts = dict(region.constants)
        for i in moved:
            consts[region.inputs[i - offset].name] = constants[node.inputs[i].name]
        regions.append(region.replace(inputs=params, constants=consts))
    inputs = [v for i, v in enumerate(node.inputs) if i not in moved]
    return Node(node.op, tuple(inputs), node.outputs, node.attrs, node.provenance, tuple(regions))


class Names:
    """Fresh names in one scope: ``fresh(hint)`` is ``hint`` unless taken, else ``hint_<k>``."""

    def __init__(self, taken: Set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, hint: str) -> str:
        name, k = sanitize_name(hint), 0
        base = name
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


def scope_names(graph: Graph) -> set[str]:
    """Every name defined in ``graph``'s own scope (inputs, constants, node results)."""
    names = {v.name for v in graph.inputs} | set(graph.constants)
    names.update(v.name for n in graph.nodes for v in n.outputs)
    return names


def inline_region(
    region: Graph, operands: Sequence[Value], names: Names
) -> tuple[list[Node], dict[str, np.ndarray], list[Value]]:
    """``region``'s nodes, constants and outputs rewritten into the enclosing scope: its inputs
    are ``operands``, its constants and results get names fresh in ``names``. Nested regions
    are closed, so they are copied unchanged."""
    rename: dict[str, Value] = dict(zip((v.name for v in region.inputs), operands, strict=True))
    constants: dict[str, np.ndarray] = {}
    for name, array in region.constants.items():
        new = names.fresh(name)
        constants[new] = array
        rename[name] = Value(new, constant_type(array))
    nodes: list[Node] = []
    for node in region.nodes:
        outputs = []
        for v in node.outputs:
            rename[v.name] = Value(names.fresh(v.name), v.type)
            outputs.append(rename[v.name])
        inputs = tuple(rename[v.name] for v in node.inputs)
        nodes.append(
            Node(node.op, inputs, tuple(outputs), node.attrs, node.provenance, node.regions)
        )
    return nodes, constants, [rename[v.name] for v in region.outputs]


def prune_unused(node: Node, live: Set[str]) -> Node:
    """``node`` without the ``if`` results that are not in ``live`` (each region drops the
    matching output) and without the operands that no region reads (an ``if``'s operands, a
    ``while``'s invariants); the same node when nothing is unused."""
    from cuvil_ref.passes.dce import eliminate_dead_code

    new = node
    if node.op == "if":
        keep = [i for i, v in enumerate(node.outputs) if v.name in live]
        if keep and len(keep) < len(node.outputs):
            regions = tuple(
                eliminate_dead_code(r.replace(outputs=[r.outputs[i] for i in keep])).graph
                for r in node.regions
            )
            outputs = tuple(node.outputs[i] for i in keep)
            new = Node(node.op, node.inputs, outputs, node.attrs, node.provenance, regions)
    offset = 1 if new.op == "if" else 0
    unused = [
        i
        for i in sinkable(new)
        if not any(_reads(r, r.inputs[i - offset].name) for r in new.regions)
    ]
    if not unused:
        return new
    regions = tuple(
        r.replace(inputs=[v for k, v in enumerate(r.inputs) if k + offset not in unused])
        for r in new.regions
    )
    inputs = tuple(v for i, v in enumerate(new.inputs) if i not in unused)
    return Node(new.op, inputs, new.outputs, new.attrs, new.provenance, regions)


def _reads(region: Graph, name: str) -> bool:
    return any(v.name == name for n in region.nodes for v in n.inputs) or any(
        v.name == name for v in region.outputs
    )
