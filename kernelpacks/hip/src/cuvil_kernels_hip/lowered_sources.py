"""Every kernel source the lowering emits for a set of representative graphs.

Used by ``scripts/compile_check.py`` (so the CI compile check covers what the pack really
generates, not only the registry's configs), the compile tests and ``gpu_bench.py --dry-run``.
Graphs come from the conformance case library (one-node graphs, when ``cuvil_conformance`` is
importable) and from zoo models captured at small sizes (when torch and the frontend import).
Both go through ``plan_partition`` only: nothing here needs a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_kernels_hip.planning import KernelPlan, plan_partition
from cuvil_kernels_hip.plugin import support_reason
from cuvil_kernels_hip.source import KernelSource
from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.memory_plan import plan_memory

#: Zoo models and the small input shapes the compile check lowers them at.
ZOO_GRAPHS: dict[str, tuple[int, ...] | None] = {
    "mlp": None,
    "digits_cnn": None,
    "resnet18": (1, 3, 32, 32),
}
#: Features the representative graphs are lowered for (tensor-core variants included).
FEATURE_SETS: tuple[tuple[str, ...], ...] = ((), ("tensor_core", "sm_90"))


def plan_graph(
    graph: Graph, options: dict | None = None, features: tuple[str, ...] = ()
) -> KernelPlan:
    """``plan_partition`` with the compiler's memory plan, as ``compile_module`` would call it
    (every node must be one the pack claims: TargetError with the reason otherwise)."""
    for node in graph.nodes:
        reason = support_reason(node, graph)
        if reason is not None:
            raise TargetError(f"target 'hip' cannot lower {node.describe()}: {reason}")
    return plan_partition(graph, dict(options or {}), plan_memory(graph), features)


def zoo_graph(name: str, shape: tuple[int, ...] | None = None) -> Graph:
    """Capture zoo model ``name`` (NCHW, optimized at opt_level 2) as the hip target gets it."""
    import torch

    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.passes import optimize
    from cuvil_ref.plugin.types import TargetPreferences
    from cuvil_ref.zoo import get_model

    model, default_shape = get_model(name)
    x = torch.randn(*(shape or default_shape))
    module = torch_to_cuvilir(model, example_inputs=(x,))
    module, _ = optimize(module, opt_level=2, preferences=TargetPreferences(layout="NCHW"))
    return module.graph


def case_graphs(quick: bool = True) -> Iterator[tuple[str, Graph]]:
    """(case id, one-node graph) of every conformance case the hip pack supports."""
    from cuvil_conformance.generators import generate_cases

    cases, _ = generate_cases(None, quick=quick)
    for case in cases:
        try:
            graph, _ = case.build()
        except Exception:  # an invalid case is the suite's to report, not ours
            continue
        if support_reason(graph.nodes[0], graph) is None:
            yield case.id, graph


def representative_graphs(quick: bool = True) -> tuple[list[tuple[str, Graph]], list[str]]:
    """(label, graph) pairs, and notes on graph sources that could not be imported."""
    graphs: list[tuple[str, Graph]] = []
    notes: list[str] = []
    try:
        graphs += list(case_graphs(quick))
    except ImportError as exc:
        notes.append(f"conformance cases skipped: {exc}")
    for name, shape in ZOO_GRAPHS.items():
        try:
            graphs.append((f"zoo:{name}", zoo_graph(name, shape)))
        except ImportError as exc:
            notes.append(f"zoo model {name} skipped: {exc}")
    return graphs, notes


def lowered_sources(
    graphs: list[tuple[str, Graph]], unroll_factors: tuple[int, ...] = (4,)
) -> dict[str, tuple[str, KernelSource]]:
    """sha256 -> (label, source) for every distinct source the graphs lower to."""
    out: dict[str, tuple[str, KernelSource]] = {}
    for label, graph in graphs:
        for features in FEATURE_SETS:
            for unroll in unroll_factors:
                plan = plan_graph(graph, {"loop_unroll_factor": unroll}, features)
                for src in plan.sources:
                    out.setdefault(src.sha256, (f"{label} -> {src.family}/{src.dtype}", src))
    return out
