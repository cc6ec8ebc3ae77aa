"""The ``cpu`` pack's lowerings: a dict keyed by op name. Its keys are the coverage report.

A :class:`Lowering` says which dtypes of the first input it handles, how to ``check`` the rest
of a node (the reason to decline, or None) and how to ``build`` it: add the node's buffers and
kernel steps to the :class:`~cuvil_kernels_cpu.lowering.context.LowerContext`.
:func:`lower_program` runs them over a partition. Importing this package does not import numba
(builders import the kernels when they run), so the plugin can answer ``supports_node`` cheaply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cuvil_kernels_cpu.lowering import conv, elementwise, gemm, norm_pool, quant, shape
from cuvil_kernels_cpu.lowering.common import FLOAT
from cuvil_kernels_cpu.lowering.context import Buf, LowerContext, Program
from cuvil_ref.errors import CuvilError, TargetError
from cuvil_ref.ir.graph import Graph, Node

Build = Callable[[Node, LowerContext], None]
Check = Callable[[Node, Graph], "str | None"]


@dataclass(frozen=True)
class Lowering:
    """How one op runs on the pack."""

    build: Build
    dtypes: frozenset[str] = FLOAT
    check: Check | None = None


def _table(entries: Mapping[str, tuple[Any, ...]]) -> dict[str, Lowering]:
    return {name: Lowering(*spec) for name, spec in entries.items()}


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


def check_node(node: Node, graph: Graph) -> str | None:
    """Why the pack declines ``node`` (None: it claims it)."""
    lowering = LOWERINGS.get(node.op)
    if lowering is None:
        return f"op '{node.op}' has no cpu lowering"
    for v in (*node.inputs, *node.outputs):
        if any(isinstance(d, int) and d < 0 for d in v.type.shape):
            return f"{node.op}: negative dims"
    first = node.inputs[0].type.dtype.value if node.inputs else "f32"
    if first not in lowering.dtypes:
        accepted = ", ".join(sorted(lowering.dtypes))
        return f"dtype {first} not supported for {node.op} (accepted: {accepted})"
    return lowering.check(node, graph) if lowering.check else None


def lower_program(graph: Graph, bindings: Mapping[str, int], options: Mapping[str, Any]) -> Program:
    """Lower every node of ``graph`` for one binding of its symbolic dims."""
    cx = LowerContext(graph, bindings, options)
    for v in graph.inputs:
        cx.bufs[v.name] = Buf(v.name, cx.shape(v), v.type.dtype.numpy, "input")
    for name, array in graph.constants.items():
        cx.bufs[name] = Buf(name, tuple(array.shape), array.dtype, "const", array=array)
    for node in graph.nodes:
        cx.node = node
        try:
            LOWERINGS[node.op].build(node, cx)
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


__all__ = ["LOWERINGS", "Lowering", "check_node", "lower_program"]
