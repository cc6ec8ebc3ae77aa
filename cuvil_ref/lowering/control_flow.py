"""Control flow the target does not claim: the core drives it, its regions compiled for the target.

Partitioning puts an ``if``/``while`` node whose pack does not claim it into a ``host``
partition (``partition.HOST``). Lowering such a partition compiles every region like a graph of
its own -- partitioned for the same target (with ``ref`` fallback node by node), memory planned
per partition and lowered through the packs (:func:`lower_region`) -- so a loop body runs on the
target's kernels while the loop is driven from the host. :class:`HostControlFlow` runs the
partition's nodes with their op's own reference semantics (``ops/control_flow.py``), whose
``run(region, arrays)`` is the region's compiled program: the predicate, or the condition's
result, comes back to the host after each run and decides what runs next.

A region never mixes with the enclosing graph: its partitions are its own, and values enter and
leave it only as the op's operands and results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError, TargetError
from cuvil_ref.interpreter import check_input, run_node
from cuvil_ref.ir.graph import Graph
from cuvil_ref.lowering.partition import PartitionPlan, partition_graph
from cuvil_ref.lowering.program import LoweredPartition, run_partitions
from cuvil_ref.ops import get_op
from cuvil_ref.passes.memory_plan import memory_report
from cuvil_ref.plugin.host import PluginHost
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import Executable


@dataclass
class RegionProgram:
    """One region, partitioned and lowered: ``run(arrays)`` gives its outputs."""

    graph: Graph
    plan: PartitionPlan
    lowered: list[LoweredPartition]
    runs: int = 0
    transfer_bytes: int = 0

    def run(self, inputs: Sequence[np.ndarray], bindings: dict[str, int]) -> list[np.ndarray]:
        env: dict[str, Any] = dict(self.graph.constants)
        for v, a in zip(self.graph.inputs, inputs, strict=True):
            env[v.name] = check_input(v.name, v.type, a, bindings)
        where = {v.name: "host" for v in self.graph.inputs}
        self.transfer_bytes += run_partitions(self.lowered, env, where)
        self.runs += 1
        return [np.asarray(env[v.name]) for v in self.graph.outputs]

    def report(self) -> dict[str, Any]:
        metrics = {
            f"partition{i}:{lp.partition.target}": m
            for i, lp in enumerate(self.lowered)
            if (m := lp.executable.metrics())
        }
        return {
            "runs": self.runs,
            "transfer_bytes": self.transfer_bytes,
            "partitions": self.plan.report(),
            "memory": memory_report([lp.memory for lp in self.lowered]),
            "metrics": metrics,
        }


def lower_region(
    region: Graph,
    spec: TargetSpec,
    host: PluginHost,
    options: Mapping[str, Any],
    fallback: str,
) -> RegionProgram:
    """``region`` partitioned for ``spec`` and lowered (nested control flow recursively)."""
    from cuvil_ref.lowering.compiler import lower_partitions

    plan = partition_graph(region, spec, host, fallback=fallback)
    return RegionProgram(region, plan, lower_partitions(plan, spec, host, options, fallback))


class HostControlFlow(Executable):
    """A ``host`` partition: control-flow nodes whose regions are compiled programs."""

    def __init__(self, graph: Graph, programs: list[tuple[RegionProgram, ...]]) -> None:
        self.graph = graph
        self.programs = programs  # per node, one program per region
        self.calls = 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self.calls += 1
        bindings: dict[str, int] = {}
        env: dict[str, Any] = dict(self.graph.constants)
        for v, a in zip(self.graph.inputs, inputs, strict=True):
            env[v.name] = check_input(v.name, v.type, a, bindings)
        for node, programs in zip(self.graph.nodes, self.programs, strict=True):
            compiled = {id(r): p for r, p in zip(node.regions, programs, strict=True)}

            def run_region(region: Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
                return compiled[id(region)].run(arrays, bindings)  # noqa: B023 (called at once)

            results = run_node(node, [env[v.name] for v in node.inputs], bindings, run_region)
            env.update({v.name: r for v, r in zip(node.outputs, results, strict=True)})
        return [np.asarray(env[v.name]) for v in self.graph.outputs]

    def metrics(self) -> dict[str, Any]:
        nodes = {}
        for node, programs in zip(self.graph.nodes, self.programs, strict=True):
            names = get_op(node.op).regions
            nodes[node.outputs[0].name] = {
                "op": node.op,
                "regions": {n: p.report() for n, p in zip(names, programs, strict=True)},
            }
        return {"calls": self.calls, "control_flow": nodes}


def lower_control_flow(
    graph: Graph,
    spec: TargetSpec,
    host: PluginHost,
    options: Mapping[str, Any],
    fallback: str,
) -> HostControlFlow:
    """The executable of a ``host`` partition: every region of every node lowered for ``spec``."""
    programs = []
    for node in graph.nodes:
        if not node.regions:
            raise TargetError(f"{node.describe()} is not control flow; it cannot run on the host")
        try:
            programs.append(
                tuple(lower_region(r, spec, host, options, fallback) for r in node.regions)
            )
        except CuvilError as exc:
            raise type(exc)(f"lowering the regions of {node.describe()}: {exc}") from exc
    return HostControlFlow(graph, programs)
