"""Dead-code elimination.

Requires: a verified graph. Ensures: every node contributes to a graph output; constants that no
node or output reads are dropped. Results are unchanged (no op in the registry has side effects).
"""

from __future__ import annotations

from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.base import PassResult


def eliminate_dead_code(graph: Graph) -> PassResult:
    live = {v.name for v in graph.outputs}
    kept = []
    for node in reversed(graph.nodes):
        if any(v.name in live for v in node.outputs):
            kept.append(node)
            live.update(v.name for v in node.inputs)
    kept.reverse()
    consts = {k: a for k, a in graph.constants.items() if k in live}
    changed = len(kept) != len(graph.nodes) or len(consts) != len(graph.constants)
    if not changed:
        return PassResult(graph, False)
    return PassResult(graph.replace(nodes=kept, constants=consts), True)
