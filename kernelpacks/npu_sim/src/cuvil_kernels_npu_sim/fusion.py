"""Inter-layer fusion: a qadd behind the qconv2d / qlinear that produces one of its operands
runs inside that layer's program, so the layer's output never makes the DRAM round trip.

The requantized output tile stays in the accumulator; the other operand's tile is loaded next
to it and one REQADD writes the sum, which is all that is stored (lower_gemm.Residual). That
saves writing and re-reading the layer output and the separate add program's pipeline edges.
Buffer limits are enforced by the tiler: output tiles and operand tiles share the accumulator
(a quarter each, double-buffered), so a fused layer's tiles are at most half the size.

A pair fuses when (`plan_residuals`): the qadd's operands have equal shapes, the layer's output
feeds only the qadd and is not a partition output, and the other operand exists before the
layer runs (a partition input, a constant or an earlier node). A pair whose fused lowering
fails (e.g. a grouped convolution) runs as two layers. Option `fuse_residual=False` turns it
off.
"""

from __future__ import annotations

from cuvil_kernels_npu_sim.layer import Layer, build_program, out_shape
from cuvil_kernels_npu_sim.lower_gemm import Residual
from cuvil_kernels_npu_sim.lowering import qconv2d_program, qlinear_program
from cuvil_kernels_npu_sim.plugin import PACK
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.kit import CheckContext

#: Layers a qadd can run inside: op -> its program builder, which takes ``residual=``.
FUSABLE = {"qconv2d": qconv2d_program, "qlinear": qlinear_program}


def plan_residuals(graph: Graph, cx: CheckContext) -> dict[str, tuple[Node, int]]:
    """Layer output name -> (the qadd to fuse behind it, the qadd operand index it feeds)."""
    users, producers = graph.users(), graph.producers()
    position = {n.outputs[0].name: i for i, n in enumerate(graph.nodes)}
    outputs = {v.name for v in graph.outputs}
    plan: dict[str, tuple[Node, int]] = {}
    for add in graph.nodes:
        if add.op != "qadd" or add.inputs[0].type.shape != add.inputs[1].type.shape:
            continue
        for i, v in enumerate(add.inputs):
            layer, other = producers.get(v.name), add.inputs[1 - i]
            if layer is None or layer.op not in FUSABLE or v.name in plan or v.name in outputs:
                continue
            if len(users.get(v.name, [])) != 1 or other.name == v.name:
                continue
            if other.name in position and position[other.name] > position[v.name]:
                continue  # the other operand is computed after the layer
            if PACK.reason(layer, cx) is None and PACK.reason(add, cx) is None:
                plan[v.name] = (add, i)
                break
    return plan


def lower_fused(layer: Node, add: Node, index: int, cx: CheckContext) -> Layer:
    """`layer` with `add` fused behind it (its output is operand `index` of the add); raises the
    kit's `Decline` when the fused program cannot be built."""
    a = add.attrs
    residual = Residual(
        skip_off=-1,  # set by the lowering once the "skip" region exists
        conv_first=index == 0,
        a_zp=a["a_zp"],
        b_zp=a["b_zp"],
        m_a=a["multiplier"][0],
        m_b=a["multiplier"][1],
        shift=a["shift"][0],
        out_zp=a["out_zp"],
        qmin=a["qmin"],
        qmax=a["qmax"],
    )
    build = FUSABLE[layer.op]
    program = build_program(build, layer, cx.graph, cx.config, residual=residual)
    out = add.outputs[0]
    inputs = ((layer.inputs[0].name, "x"), (add.inputs[1 - index].name, "skip"))
    return Layer(out.name, f"{layer.op}+qadd", program, inputs, out.name, out_shape(add))
