"""Constant folding: evaluate nodes whose inputs are all constants, at compile time.

Requires: a verified graph. Ensures: no node whose inputs are all constants remains, except those
whose result would exceed ``MAX_FOLD_BYTES`` (folding them would bloat the artifact) and those
whose output type carries a layout or quantization tag (a constant cannot hold one). A folded
node's output becomes a constant of the same name, computed by the reference interpreter's
``run_node``, so values are exactly what the interpreter would have computed at run time.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.interpreter import run_node
from cuvil_ref.ir.graph import Graph, Node, constant_type
from cuvil_ref.passes.base import PassResult

#: Results larger than this stay as nodes.
MAX_FOLD_BYTES = 16 * 1024 * 1024


def _foldable(node: Node, constants: dict[str, np.ndarray]) -> bool:
    if not all(v.name in constants for v in node.inputs):
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
    folded = 0
    for node in graph.nodes:
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
        folded += 1
    if not folded:
        return PassResult(graph, False)
    return PassResult(graph.replace(nodes=kept, constants=constants), True)
