"""Constant folding: evaluate nodes whose inputs are all constants, at compile time.

Requires: a verified graph. Ensures: no node whose inputs are all constants remains, except those
whose result would exceed ``MAX_FOLD_BYTES`` (folding them would bloat the artifact), those
whose output type carries a layout or quantization tag (a constant cannot hold one) and
control-flow nodes (a ``while`` could run for ever at compile time). A folded node's output
becomes a constant of the same name, computed by the reference interpreter's ``run_node``, so
values are exactly what the interpreter would have computed at run time.

Regions: an operand of an ``if`` (or an invariant of a ``while``) that is a constant moves into
the regions as a region constant; every region is then folded in turn; and an ``if`` whose
predicate is a constant is replaced by the nodes of the branch it takes (the other branch is
gone), its results renamed to that branch's results.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.interpreter import run_node
from cuvil_ref.ir.graph import Graph, Node, Value, constant_type
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.regions import Names, inline_region, scope_names, sink_constants
from cuvil_ref.passes.rewrite import rename_inputs

#: Results larger than this stay as nodes.
MAX_FOLD_BYTES = 16 * 1024 * 1024


def _foldable(node: Node, constants: dict[str, np.ndarray]) -> bool:
    if node.regions or not all(v.name in constants for v in node.inputs):
        return False
    for v in node.outputs:
        t = v.type
        if not t.is_static or t.layout is not None or t.quant is not None:
            return False
        if t.nbytes() > MAX_FOLD_BYTES:
            return False
    # A symbolic attribute (e.g. reshape to ("batch", -1)) needs run-time bindings.
    return not any(
        isinstance(a, tuple) and any(isinstance(x, str) for x in a) for a in node.attrs.values()
    )


def fold_constants(graph: Graph) -> PassResult:
    constants = dict(graph.constants)
    kept: list[Node] = []
    rename: dict[str, Value] = {}
    names: Names | None = None
    changed = False
    for old in graph.nodes:
        node = rename_inputs(old, rename)
        changed |= node is not old
        if node.regions:
            new = _fold_regions(node, constants)
            changed |= new is not node
            node = new
            pred = node.inputs[0].name if node.op == "if" else None
            if pred is not None and pred in constants:
                names = names or Names(scope_names(graph))
                region = node.regions[0] if bool(constants[pred]) else node.regions[1]
                nodes, consts, outs = inline_region(region, node.inputs[1:], names)
                kept.extend(nodes)
                constants.update(consts)
                rename.update({v.name: o for v, o in zip(node.outputs, outs, strict=True)})
                changed = True
                continue
            kept.append(node)
            continue
        if not _foldable(node, constants):
            kept.append(node)
            continue
        results = run_node(node, [constants[v.name] for v in node.inputs], {})
        arrays = [np.require(r, requirements="C") for r in results]
        if any(constant_type(a) != v.type for a, v in zip(arrays, node.outputs, strict=True)):
            kept.append(node)  # a reference returned another shape: leave it to the verifier
            continue
        for v, a in zip(node.outputs, arrays, strict=True):
            constants[v.name] = a
        changed = True
    if not changed:
        return PassResult(graph, False)
    outputs = [rename.get(v.name, v) for v in graph.outputs]
    return PassResult(graph.replace(nodes=kept, outputs=outputs, constants=constants), True)


def _fold_regions(node: Node, constants: dict[str, np.ndarray]) -> Node:
    """Constant operands sunk into ``node``'s regions, then each region folded."""
    node = sink_constants(node, constants)
    results = [fold_constants(region) for region in node.regions]
    if not any(r.changed for r in results):
        return node
    return node.with_regions([r.graph for r in results])
