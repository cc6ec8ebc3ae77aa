"""Dead-code elimination.

Requires: a verified graph. Ensures: every node contributes to a graph output; constants that no
node or output reads are dropped. Results are unchanged (no op in the registry has side effects).
Inside regions the same holds per region (a region's outputs are what it must compute); an
``if`` also drops the results nobody reads (from both branches), and a control-flow op drops the
operands none of its regions read. A region never loses a node that feeds its outputs, and no
value crosses a region's edge except as an operand.
"""

from __future__ import annotations

from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.base import PassResult


def eliminate_dead_code(graph: Graph) -> PassResult:
    from cuvil_ref.passes.regions import prune_unused

    live = {v.name for v in graph.outputs}
    kept = []
    changed = False
    for node in reversed(graph.nodes):
        if any(v.name in live for v in node.outputs):
            if node.regions:
                pruned = prune_unused(node, live)
                regions = [eliminate_dead_code(r) for r in pruned.regions]
                if any(r.changed for r in regions):
                    pruned = pruned.with_regions([r.graph for r in regions])
                changed |= pruned is not node
                node = pruned
            kept.append(node)
            live.update(v.name for v in node.inputs)
    kept.reverse()
    consts = {k: a for k, a in graph.constants.items() if k in live}
    changed |= len(kept) != len(graph.nodes) or len(consts) != len(graph.constants)
    if not changed:
        return PassResult(graph, False)
    return PassResult(graph.replace(nodes=kept, constants=consts), True)
