"""Quantization of graphs with control flow: every region is quantized as a graph of its own.

A region's values exist only while it runs, and a region may run many times (a loop body) or
never (a branch not taken), so the quantizer treats each region like a model: its calibration
data are the inputs it actually received while the calibration batches ran through the float
graph (:func:`region_inputs`, at most :data:`MAX_RUNS` runs per region), and it is quantized
by the same procedure as the whole graph (:func:`quantize_regions` takes that procedure as
``quantize``, which recurses into nested regions the same way). The region's interface stays
float: it quantizes what it reads and dequantizes what it returns, so both branches of an
``if`` and every iteration of a ``while`` agree on types. A region that never ran during
calibration has no ranges and stays float; the report and a warning say so.

In the enclosing graph a control-flow node reads and returns float values
(:func:`control_flow_rule`, a PTQ rule) and keeps its quantized regions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_ref.interpreter import check_input, run_graph, run_node
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import families, get_op
from cuvil_ref.quant.report import layer_entry

if TYPE_CHECKING:
    from cuvil_ref.quant.rewriter import Rewriter

Batch = tuple[np.ndarray, ...]
#: The most runs of one region kept as its calibration data (a long loop repeats itself).
MAX_RUNS = 512

RegionQuantizer = Callable[[Graph, list[Batch]], tuple[Graph, list[dict[str, Any]]]]


def region_inputs(
    graph: Graph, batches: Sequence[Batch], limit: int = MAX_RUNS
) -> dict[tuple[int, int], list[Batch]]:
    """``(node index, region index) -> the inputs of each run`` of the regions of ``graph``'s
    own control-flow nodes, over all ``batches`` (nested regions are their region's business)."""
    seen: dict[tuple[int, int], list[Batch]] = {}
    for batch in batches:
        bindings: dict[str, int] = {}
        env: dict[str, Any] = dict(graph.constants)
        for v, array in zip(graph.inputs, batch, strict=True):
            env[v.name] = check_input(v.name, v.type, array, bindings)
        for index, node in enumerate(graph.nodes):
            runner = _recorder(index, node, seen, bindings, limit) if node.regions else None
            results = run_node(node, [env[v.name] for v in node.inputs], bindings, runner)
            env.update({v.name: r for v, r in zip(node.outputs, results, strict=True)})
    return seen


def _recorder(
    index: int,
    node: Node,
    seen: dict[tuple[int, int], list[Batch]],
    bindings: dict[str, int],
    limit: int,
) -> Callable[[Graph, Sequence[np.ndarray]], list[np.ndarray]]:
    def run(region: Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        k = next(k for k, r in enumerate(node.regions) if r is region)
        runs = seen.setdefault((index, k), [])
        if len(runs) < limit:
            runs.append(tuple(np.asarray(a) for a in arrays))
        return run_graph(region, arrays, bindings)

    return run


def quantize_regions(
    graph: Graph, batches: Sequence[Batch], quantize: RegionQuantizer
) -> tuple[Graph, dict[str, list[dict[str, Any]]]]:
    """``graph`` with each region of its control-flow nodes replaced by ``quantize(region, the
    inputs it saw)``; also the per-node region reports (keyed by the node's first result)."""
    if not graph.has_regions:
        return graph, {}
    seen = region_inputs(graph, batches)
    nodes: list[Node] = []
    reports: dict[str, list[dict[str, Any]]] = {}
    for index, node in enumerate(graph.nodes):
        if not node.regions:
            nodes.append(node)
            continue
        names = get_op(node.op).regions
        regions, entries = [], []
        for k, (name, region) in enumerate(zip(names, node.regions, strict=True)):
            runs = seen.get((index, k), [])
            if not runs:
                reason = (
                    f"region @{name} of {node.describe()} never ran on the calibration data, so "
                    "it has no ranges and stays float; give calibration batches that reach it"
                )
                warnings.warn(f"quantize: {reason}", UserWarning, stacklevel=2)
                regions.append(region)
                entries.append({"region": name, "runs": 0, "layers": [], "reason": reason})
                continue
            qregion, layers = quantize(region, runs)
            regions.append(qregion)
            entries.append({"region": name, "runs": len(runs), "layers": layers, "reason": None})
        nodes.append(node.with_regions(regions))
        reports[node.outputs[0].name] = entries
    return graph.replace(nodes=nodes), reports


def control_flow_rule(rw: Rewriter, node: Node) -> dict[str, Any]:
    """PTQ rule for ``if``/``while``: float operands in, float results out, regions kept (they
    were quantized on their own by :func:`quantize_regions`)."""
    inputs = [rw.as_float(v) for v in node.inputs]
    outs = rw.b.op_multi(
        node.op,
        inputs,
        node.attrs,
        name=node.outputs[0].name,
        provenance=node.provenance,
        output_types=[v.type for v in node.outputs],
        regions=node.regions,
    )
    for old, new in zip(node.outputs, outs, strict=True):
        rw.floats[old.name] = new
    return layer_entry(node, "control flow", "its regions are quantized on their own")


def rules() -> dict[str, Callable[[Rewriter, Node], dict[str, Any]]]:
    return {op: control_flow_rule for op in families.CONTROL_FLOW}


def attach(layers: list[dict[str, Any]], reports: dict[str, list[dict[str, Any]]]) -> None:
    """Put each control-flow node's region reports on its layer entry (``layer["regions"]``)."""
    for layer in layers:
        if layer["node"] in reports:
            layer["regions"] = reports[layer["node"]]
