"""A lowered node (`Layer`) and the kit lowerings that build one.

Every entry of the pack's lowering table (`cuvil_kernels_npu_sim.lowering.TABLE`) is a kit
`Lowering` whose `lower(node, cx)` returns the node's `Layer`: `program_layer(build, ...)` for
an op with an instruction program (`build(node, graph, cfg)` bakes weights and tables in from
the graph's constants; the pairs name the inputs the program reads at run time and the program
region each lands in), `move_layer` for data movement, which has no program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.program import Program
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.kit import CheckContext, Decline

ProgramFn = Callable[[Node, Graph, NpuConfig], Program]
LayerFn = Callable[[Node, CheckContext], "Layer"]


@dataclass(frozen=True)
class Layer:
    """One node of a partition: its program (None for data movement) and region bindings."""

    node: str  # the node's first output name
    op: str
    program: Program | None
    inputs: tuple[tuple[str, str], ...]  # (IR value, program input region)
    output: str
    out_shape: tuple[int, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)  # DMA moves: the node's attributes


def out_shape(node: Node) -> tuple[int, ...]:
    return tuple(int(d) for d in node.outputs[0].type.shape)


def build_program(build: Callable[..., Program], node: Node, *args: Any, **extra: Any) -> Program:
    """``build(node, *args, **extra)``, a limit it raises (ValueError, NotImplementedError) turned
    into a `Decline` naming the op."""
    try:
        return build(node, *args, **extra)
    except (ValueError, NotImplementedError) as exc:
        raise Decline(f"{node.op}: {exc}") from exc


def program_layer(build: ProgramFn, *runtime: tuple[int, str]) -> LayerFn:
    """The kit lowering of an op whose layer runs the program ``build`` makes; ``runtime`` are
    its (input index, program region) pairs (the other inputs are baked in)."""

    def lower(node: Node, cx: CheckContext) -> Layer:
        program = build_program(build, node, cx.graph, cx.config)
        bindings = tuple((node.inputs[i].name, region) for i, region in runtime)
        out = node.outputs[0].name
        return Layer(out, node.op, program, bindings, out, out_shape(node))

    return lower


def move_layer(node: Node, cx: CheckContext) -> Layer:
    """The kit lowering of data movement: no program, the executable moves the bytes."""
    out = node.outputs[0].name
    x = ((node.inputs[0].name, "x"),)
    return Layer(out, node.op, None, x, out, out_shape(node), dict(node.attrs))
