"""The ``cpu`` pack's lowering table: op name -> kit :class:`~cuvil_ref.plugin.kit.Lowering`.

Its keys are the coverage report. A record says which dtypes the first input may have, how to
``check`` the rest of a node (``check(node, cx)`` with the kit's ``CheckContext``: the reason to
decline, or None) and how to ``lower`` it: add the node's buffers and kernel steps to the
:class:`~cuvil_kernels_cpu.lowering.context.LowerContext`. :func:`lower_program` runs them over
a partition. Importing this package does not import numba (lowerings import the kernels when
they run), so the plugin answers ``supports_node`` cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuvil_kernels_cpu.lowering import (
    attention,
    conv,
    elementwise,
    gemm,
    norm_pool,
    quant,
    shape,
    views,
)
from cuvil_kernels_cpu.lowering.common import FLOAT
from cuvil_kernels_cpu.lowering.context import Buf, LowerContext, Program
from cuvil_ref.errors import CuvilError, TargetError
from cuvil_ref.ir.graph import Graph
from cuvil_ref.plugin.kit import Lowering, no_check


def _table(entries: Mapping[str, tuple[Any, ...]]) -> dict[str, Lowering]:
    """Rows of ``(lower, dtypes, check or None)``."""
    return {
        name: Lowering(lower, dtypes, check or no_check)
        for name, (lower, dtypes, check) in entries.items()
    }


LOWERINGS: dict[str, Lowering] = {
    "conv2d": Lowering(conv.lower, FLOAT, conv.check),
    "fused_conv2d": Lowering(conv.lower, FLOAT, conv.check),
    "linear": Lowering(gemm.lower_linear, FLOAT, gemm.check_linear),
    "fused_linear": Lowering(gemm.lower_linear, FLOAT, gemm.check_linear),
    "matmul": Lowering(gemm.lower_matmul, FLOAT, gemm.check_matmul),
    "fused_matmul": Lowering(gemm.lower_matmul, FLOAT, gemm.check_matmul),
    **_table(norm_pool.ENTRIES),
    **_table(elementwise.ENTRIES),
    **_table(shape.ENTRIES),
    **_table(quant.ENTRIES),
}


def lower_program(graph: Graph, bindings: Mapping[str, int], options: Mapping[str, Any]) -> Program:
    """Lower every node of ``graph`` for one binding of its symbolic dims."""
    cx = LowerContext(graph, bindings, options)
    for v in graph.inputs:
        cx.bufs[v.name] = Buf(v.name, cx.shape(v), v.type.dtype.numpy, "input")
    for name, array in graph.constants.items():
        cx.bufs[name] = Buf(name, tuple(array.shape), array.dtype, "const", array=array)
    cx.scores = attention.plan(graph, cx.shape)
    cx.absorbed = {name for recipe in cx.scores.values() for name in recipe.absorbed}
    cx.permuted = views.plan(graph, cx.shape)
    for node in graph.nodes:
        if node.outputs[0].name in cx.absorbed:
            continue
        cx.node = node
        try:
            LOWERINGS[node.op].lower(node, cx)
        except CuvilError:
            raise
        except Exception as exc:
            where = f" (at {node.provenance.source})" if node.provenance else ""
            raise TargetError(
                f"target 'cpu': lowering %{node.outputs[0].name} = {node.op}{where} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    cx.node = None
    outputs = [cx.logical(v) for v in graph.outputs]
    return Program(cx.bufs, cx.steps, [v.name for v in graph.inputs], outputs, cx.choices)


__all__ = ["LOWERINGS", "lower_program"]
