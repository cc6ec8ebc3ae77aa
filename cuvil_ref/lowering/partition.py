"""Capability-based partitioning with fallback to ``ref``.

Every node is asked of the target's pack (``cuvil_supports_node``); unsupported nodes are assigned
to ``ref``. Nodes are then re-ordered topologically, preferring to stay on the current target, so
each target gets maximal runs; every run becomes one partition subgraph whose inputs are the
values crossing into it (the transfers at its edges) and whose outputs are the values leaving it.

A control-flow node (``if``, ``while``) is placed whole, with its regions: on the target when its
pack claims it (the pack then lowers the regions too), else on ``host``: the core runs the
control flow and compiles each region for the target like a graph of its own
(``lowering/control_flow.py``). On the ``ref`` target it is interpreted with everything else.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.plugin.target_spec import TargetSpec

REF = "ref"
#: Control flow the target does not claim: run by the core, its regions compiled for the target.
HOST = "host"


@dataclass(frozen=True)
class FallbackNode:
    """A node that runs on ``ref`` because the target declined it."""

    node: str
    op: str
    reason: str
    source: str | None = None


@dataclass(frozen=True)
class Partition:
    """A maximal run of nodes for one target, as a self-contained graph."""

    target: str
    graph: Graph

    def summary(self) -> dict[str, object]:
        return {
            "target": self.target,
            "nodes": len(self.graph.nodes),
            "ops": self.graph.op_histogram(),
            "inputs": [v.name for v in self.graph.inputs],
            "outputs": [v.name for v in self.graph.outputs],
        }


@dataclass(frozen=True)
class PartitionPlan:
    partitions: tuple[Partition, ...]
    fallback: tuple[FallbackNode, ...]

    def report(self) -> dict[str, object]:
        return {
            "count": len(self.partitions),
            "partitions": [p.summary() for p in self.partitions],
            "fallback": [f.__dict__ for f in self.fallback],
        }


def assign_targets(
    graph: Graph, target: TargetSpec, host: object
) -> tuple[list[str], list[FallbackNode]]:
    """Target name per node, plus the fallback nodes with the pack's reasons."""
    from cuvil_ref.plugin.host import PluginHost

    assert isinstance(host, PluginHost)
    assignment: list[str] = []
    fallback: list[FallbackNode] = []
    for node in graph.nodes:
        if target.name == REF:
            assignment.append(REF)
            continue
        answer = host.call("cuvil_supports_node", target, target=target, node=node, graph=graph)
        if answer is not None and answer.supported:
            assignment.append(target.name)
        elif node.regions:
            assignment.append(HOST)  # not a fallback: its regions still go to the target
        else:
            reason = answer.reason if answer is not None else "the pack gave no answer"
            src = node.provenance.source if node.provenance else None
            fallback.append(FallbackNode(node.outputs[0].name, node.op, reason, src))
            assignment.append(REF)
    return assignment, fallback


def partition_graph(
    graph: Graph, target: TargetSpec, host: object, fallback: str = "allow"
) -> PartitionPlan:
    """Split ``graph`` into partitions for ``target`` and ``ref``.

    ``fallback="error"`` raises :class:`TargetError` listing every node the target declined.
    """
    if fallback not in ("allow", "error"):
        raise TargetError(f"fallback must be 'allow' or 'error', got {fallback!r}")
    assignment, fallbacks = assign_targets(graph, target, host)
    if fallbacks and fallback == "error":
        lines = "\n".join(
            f"  %{f.node} = {f.op}: {f.reason}" + (f" (at {f.source})" if f.source else "")
            for f in fallbacks
        )
        raise TargetError(
            f"target '{target.name}' cannot run {len(fallbacks)} node(s) and fallback='error' "
            f"forbids running them on 'ref':\n{lines}"
        )
    order = _cluster_order(graph, assignment)
    runs: list[tuple[str, list[Node]]] = []
    for idx in order:
        t = assignment[idx]
        if not runs or runs[-1][0] != t:
            runs.append((t, []))
        runs[-1][1].append(graph.nodes[idx])
    parts = tuple(
        Partition(t, _subgraph(graph, nodes, runs, i)) for i, (t, nodes) in enumerate(runs)
    )
    if not parts:  # a graph without nodes (outputs are inputs or constants)
        parts = (Partition(REF, graph),)
    return PartitionPlan(parts, tuple(fallbacks))


def _cluster_order(graph: Graph, assignment: list[str]) -> list[int]:
    """Topological order that switches target as rarely as possible (greedy Kahn)."""
    producer = {v.name: i for i, n in enumerate(graph.nodes) for v in n.outputs}
    deps: list[set[int]] = []
    users: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(graph.nodes):
        d = {producer[v.name] for v in n.inputs if v.name in producer}
        deps.append(d)
        for j in d:
            users[j].append(i)
    remaining = [len(d) for d in deps]
    ready = [i for i, r in enumerate(remaining) if r == 0]
    order: list[int] = []
    current = assignment[0] if assignment else REF
    while ready:
        same = [i for i in ready if assignment[i] == current]
        pick = min(same) if same else min(ready)
        current = assignment[pick]
        ready.remove(pick)
        order.append(pick)
        for u in users[pick]:
            remaining[u] -= 1
            if remaining[u] == 0:
                ready.append(u)
    return order


def _subgraph(
    graph: Graph, nodes: list[Node], runs: list[tuple[str, list[Node]]], index: int
) -> Graph:
    defined = {v.name for n in nodes for v in n.outputs}
    later_uses: set[str] = {v.name for v in graph.outputs}
    for _, other in runs[index + 1 :]:
        for n in other:
            later_uses.update(v.name for v in n.inputs)
    inputs: list[Value] = []
    consts: dict[str, np.ndarray] = {}
    seen: set[str] = set()
    for n in nodes:
        for v in n.inputs:
            if v.name in defined or v.name in seen:
                continue
            seen.add(v.name)
            if v.name in graph.constants:
                consts[v.name] = graph.constants[v.name]
            else:
                inputs.append(v)
    outputs = [v for n in nodes for v in n.outputs if v.name in later_uses]
    return Graph(tuple(inputs), tuple(nodes), tuple(outputs), consts)
