"""Lower a whole partition graph: one layer per node, in graph order, into an `NpuExecutable`.

Everything that can be decided before a run is decided here (programs with their weights and
tables, region bindings, relayouts); `NpuExecutable.run` only simulates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuvil_kernels_npu_sim.executable import NpuExecutable
from cuvil_kernels_npu_sim.fusion import lower_fused, plan_residuals
from cuvil_kernels_npu_sim.options import config_for
from cuvil_kernels_npu_sim.plugin import PACK
from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph
from cuvil_ref.plugin import TargetSpec
from cuvil_ref.plugin.kit import CheckContext, Decline


def lower_partition(target: str, graph: Graph, options: Mapping[str, Any]) -> NpuExecutable:
    """An executable for `graph` on `target` with validated `options` (extra keys ignored)."""
    cfg = config_for(target, options)
    cx = CheckContext(graph, TargetSpec(target), cfg)
    fused = plan_residuals(graph, cx) if options.get("fuse_residual", True) else {}
    absorbed: set[int] = set()  # qadd nodes that run inside their producer's program
    layers = []
    for node in graph.nodes:
        if len(node.outputs) != 1:
            raise TargetError(f"target '{target}': node {node.describe()} has several outputs")
        if id(node) in absorbed:
            continue
        if node.outputs[0].name in fused:
            add, index = fused[node.outputs[0].name]
            try:
                layers.append(lower_fused(node, add, index, cx))
                absorbed.add(id(add))
                continue
            except Decline:  # e.g. a grouped conv: run the pair as two layers
                pass
        try:
            layers.append(PACK.lower(node, cx))
        except Decline as exc:
            raise TargetError(
                f"target '{target}' cannot lower node {node.describe()}: {exc} (the partitioner "
                "should have sent it to 'ref')"
            ) from exc
    shapes = {
        v.name: tuple(int(d) for d in v.type.shape)
        for n in graph.nodes
        for v in (*n.inputs, *n.outputs)
    }
    return NpuExecutable(
        layers,
        [v.name for v in graph.inputs],
        [v.name for v in graph.outputs],
        dict(graph.constants),
        cfg,
        shapes,
        sim_mode=str(options.get("sim_mode", "timed")),
        trace=bool(options.get("trace", False)),
    )
