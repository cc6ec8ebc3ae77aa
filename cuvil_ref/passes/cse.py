"""Common-subexpression elimination, for nodes and for constants.

Requires: a verified graph. Ensures: no two nodes have the same op, inputs, attributes and output
types (the later one is removed and its readers read the earlier one's outputs), and no two
constants have the same dtype, shape and bytes (readers of the duplicate read the first). Every
op is a pure function of its inputs and attributes (and regions), so results are unchanged. The
pass manager runs it inside each region separately: a region's node is never merged with one
outside it, since a region reads nothing of the enclosing graph but its operands.
"""

from __future__ import annotations

import hashlib

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.rewrite import rename_inputs


def _fingerprint(array: np.ndarray) -> str:
    """A cheap digest of a sample of the bytes (equal arrays have equal fingerprints; a match is
    then confirmed by comparing the arrays)."""
    flat = array.reshape(-1)
    step = max(1, flat.size // 4096)
    return hashlib.sha256(np.ascontiguousarray(flat[::step]).tobytes()).hexdigest()


def _constant_renames(graph: Graph) -> tuple[dict[str, Value], dict]:
    seen: dict[tuple, str] = {}
    rename: dict[str, Value] = {}
    kept = {}
    # only constants that share a dtype and shape with another can be duplicates: hash those
    groups: dict[tuple, int] = {}
    for array in graph.constants.values():
        groups[(str(array.dtype), array.shape)] = groups.get((str(array.dtype), array.shape), 0) + 1
    for name, array in graph.constants.items():
        kind = (str(array.dtype), array.shape)
        digest = _fingerprint(array) if groups[kind] > 1 else name
        key = (*kind, digest)
        if key in seen and graph.constants[seen[key]].tobytes() == array.tobytes():
            rename[name] = graph.constant_value(seen[key])
        else:
            seen[key] = name
            kept[name] = array
    return rename, kept


def eliminate_common_subexpressions(graph: Graph) -> PassResult:
    rename, constants = _constant_renames(graph)
    seen: dict[tuple, Node] = {}
    nodes: list[Node] = []
    for old in graph.nodes:
        node = rename_inputs(old, rename)
        key = (
            node.op,
            tuple(v.name for v in node.inputs),
            node.attrs,
            tuple(v.type for v in node.outputs),
            node.regions,  # equal regions compute equal results; each region is CSE'd inside
        )
        first = seen.get(key)
        if first is None:
            seen[key] = node
            nodes.append(node)
            continue
        for dup, orig in zip(node.outputs, first.outputs, strict=True):
            rename[dup.name] = orig
    if not rename:
        return PassResult(graph, False)
    outputs = [rename.get(v.name, v) for v in graph.outputs]
    return PassResult(graph.replace(nodes=nodes, outputs=outputs, constants=constants), True)
