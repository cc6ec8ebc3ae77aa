"""The hip pack's lowerings: op name -> (capability check, lowering). Its keys are the coverage.

``support_reason(node, graph)`` answers ``cuvil_supports_node``: None when the kernels reproduce
the interpreter for the node, else the reason. Checks shared by every op (static shapes) run
first; then the op's own check. ``LOWERINGS`` is assembled from the per-family modules in
``cuvil_kernels_hip.lowerings``.
"""

from __future__ import annotations

from cuvil_kernels_hip.lowerings import elementwise, gemm, pooling, quant, rows
from cuvil_kernels_hip.lowerings.common import Lowering, symbolic_reason
from cuvil_ref.ir.graph import Graph, Node

LOWERINGS: dict[str, Lowering] = {
    **elementwise.LOWERINGS,
    **rows.LOWERINGS,
    **gemm.LOWERINGS,
    **pooling.LOWERINGS,
    **quant.LOWERINGS,
}


def support_reason(node: Node, graph: Graph) -> str | None:
    """None if the hip pack runs ``node`` exactly as the interpreter does, else why not."""
    lowering = LOWERINGS.get(node.op)
    if lowering is None:
        return f"op '{node.op}' has no hip kernel (covered ops: {len(LOWERINGS)}, see LOWERINGS)"
    if len(node.outputs) != 1:
        return f"op '{node.op}' with {len(node.outputs)} outputs has no hip kernel"
    reason = symbolic_reason(node)
    if reason:
        return reason
    try:
        return lowering.check(node, graph)
    except (KeyError, ValueError, TypeError) as exc:  # malformed attributes: decline, say why
        return f"cannot lower '{node.op}': {type(exc).__name__}: {exc}"


def coverage() -> list[str]:
    """The ops this pack can lower (each still subject to its check)."""
    return sorted(LOWERINGS)
