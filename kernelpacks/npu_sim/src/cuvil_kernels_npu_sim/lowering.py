"""IR node -> NPU layer: the pack's lowering table (`TABLE`, kit `Lowering` records) and checks.

Each quantized op lowers to one layer `Program` (weights and requantization tables are baked in
from the graph's constants); the `Layer` records which IR values feed which program regions.
Pure data-movement ops on int8 (`reshape`, `flatten`, `squeeze`, `unsqueeze`) reinterpret a
contiguous DRAM tensor and have no program (a layout change they imply is costed by the
executable); the DMA moves (`transpose`, `permute`, `slice`, `expand`) have none either. A limit
of the array is a kit `Decline` with the reason; the pack claims a node exactly when its layer
builds (`KernelPack(probe=True)`), and lowers a partition with the same `PACK.lower`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.layer import move_layer, program_layer
from cuvil_kernels_npu_sim.lower_conv import lower_qconv2d, lower_qlinear, lower_qmatmul
from cuvil_kernels_npu_sim.lower_eltwise import lower_qadd
from cuvil_kernels_npu_sim.lower_pool import (
    avg_pool_counts,
    lower_qadaptive_avg_pool2d,
    lower_qavg_pool2d,
    lower_qmax_pool2d,
)
from cuvil_kernels_npu_sim.lowering_transformer import DMA_MOVES
from cuvil_kernels_npu_sim.lowering_transformer import LOWERINGS as SFU_LOWERINGS
from cuvil_kernels_npu_sim.program import Program
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import families
from cuvil_ref.plugin.kit import CheckContext, Decline, Lowering, checks

DATA_MOVEMENT = families.VIEWS
BOUNDARY = families.QUANT_BOUNDARY
MAX_PAD = 7  # LOAD inserts at most 7 padding elements per side


def _shape(node: Node, i: int) -> tuple[int, ...]:
    return tuple(int(d) for d in node.inputs[i].type.shape)


def _const(node: Node, graph: Graph, i: int, what: str) -> np.ndarray | None:
    if i >= len(node.inputs):
        return None
    name = node.inputs[i].name
    if name not in graph.constants:
        raise Decline(
            f"{what} '%{name}' is a runtime value; npu_sim bakes {what}s into the program, so "
            "it must be a graph constant"
        )
    return np.asarray(graph.constants[name])


def _sym_pad(node: Node) -> tuple[int, int]:
    """``(ph, pw)``: LOAD pads top == bottom and left == right, at most 7 elements per side."""
    pads = checks.symmetric_padding(node, MAX_PAD)
    if isinstance(pads, str):
        raise Decline(pads)
    return pads


def _no_ceil(op: str, node: Node) -> None:
    if node.attrs["ceil_mode"]:
        raise Decline(f"{op}: ceil_mode=True is not supported (floor output sizes only)")


def _table(node: Node, counts: list[int]) -> dict[int, tuple[int, int]]:
    mult, shift = node.attrs["multiplier"], node.attrs["shift"]
    missing = [n for n in counts if n > len(mult)]
    if missing:
        raise Decline(
            f"{node.op}: windows of {missing} elements but the multiplier table covers "
            f"1..{len(mult)}"
        )
    return {n: (int(mult[n - 1]), int(shift[n - 1])) for n in counts}


def _out(node: Node) -> dict[str, int]:
    a = node.attrs
    return {"out_zp": a["out_zp"], "qmin": a["qmin"], "qmax": a["qmax"]}


def qconv2d_program(node: Node, graph: Graph, cfg: NpuConfig, **extra: Any) -> Program:
    a = node.attrs
    weight = _const(node, graph, 1, "weight")
    bias = _const(node, graph, 2, "bias")
    return lower_qconv2d(
        _shape(node, 0),
        weight,
        bias,
        np.asarray(a["multiplier"], np.int64),
        np.asarray(a["shift"], np.int64),
        x_zp=a["x_zp"],
        stride=a["stride"],
        padding=_sym_pad(node),
        dilation=a["dilation"],
        groups=a["groups"],
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
        **extra,
    )


def qlinear_program(node: Node, graph: Graph, cfg: NpuConfig, **extra: Any) -> Program:
    a = node.attrs
    return lower_qlinear(
        _shape(node, 0),
        _const(node, graph, 1, "weight"),
        _const(node, graph, 2, "bias"),
        np.asarray(a["multiplier"], np.int64),
        np.asarray(a["shift"], np.int64),
        x_zp=a["x_zp"],
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
        **extra,
    )


def _qmatmul(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    a_shape, b_shape = _shape(node, 0), _shape(node, 1)
    if len(a_shape) < 2 or len(a_shape) != len(b_shape) or a_shape[:-2] != b_shape[:-2]:
        raise Decline(
            f"qmatmul: shapes {list(a_shape)} @ {list(b_shape)}: npu_sim needs rank >= 2 and "
            "equal batch dims (no broadcasting, no 1-D operands)"
        )
    a = node.attrs
    return lower_qmatmul(
        a_shape,
        b_shape,
        a["multiplier"][0],
        a["shift"][0],
        a_zp=a["a_zp"],
        b_zp=a["b_zp"],
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
    )


def _qadd(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    a_shape, b_shape = _shape(node, 0), _shape(node, 1)
    if a_shape != b_shape:
        raise Decline(
            f"qadd: broadcasting {list(a_shape)} + {list(b_shape)} is not supported; "
            "npu_sim adds tensors of equal shape"
        )
    if 0 in a_shape:
        raise Decline("qadd: empty tensors are not lowered")
    a = node.attrs
    return lower_qadd(
        a_shape,
        a_zp=a["a_zp"],
        b_zp=a["b_zp"],
        m_a=a["multiplier"][0],
        m_b=a["multiplier"][1],
        shift=a["shift"][0],
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
    )


def _pool_pad(node: Node) -> tuple[int, int]:
    ph, pw = _sym_pad(node)
    kh, kw = node.attrs["kernel"]
    if ph > kh // 2 or pw > kw // 2:
        raise Decline(f"{node.op}: padding ({ph}, {pw}) exceeds half the kernel {(kh, kw)}")
    return ph, pw


def _qmax_pool2d(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    _no_ceil("qmax_pool2d", node)
    a = node.attrs
    return lower_qmax_pool2d(
        _shape(node, 0),
        a["kernel"],
        a["stride"],
        _pool_pad(node),
        a["dilation"],
        target=cfg,
        name=node.outputs[0].name,
    )


def _qavg_pool2d(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    _no_ceil("qavg_pool2d", node)
    a = node.attrs
    pad = _pool_pad(node)
    include = a["count_include_pad"]
    counts = avg_pool_counts(_shape(node, 0), a["kernel"], a["stride"], pad, include)
    return lower_qavg_pool2d(
        _shape(node, 0),
        a["kernel"],
        a["stride"],
        pad,
        x_zp=a["x_zp"],
        multipliers=_table(node, counts),
        count_include_pad=include,
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
    )


def _qadaptive_avg_pool2d(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    x_shape = _shape(node, 0)
    (h, w), (oh, ow) = x_shape[2:], node.attrs["output_size"]
    if h % oh or w % ow:
        raise Decline(
            f"qadaptive_avg_pool2d: input {h}x{w} is not a multiple of output {oh}x{ow} "
            "(non-uniform adaptive windows are not supported)"
        )
    a = node.attrs
    return lower_qadaptive_avg_pool2d(
        x_shape,
        (oh, ow),
        x_zp=a["x_zp"],
        multipliers=_table(node, [(h // oh) * (w // ow)]),
        target=cfg,
        name=node.outputs[0].name,
        **_out(node),
    )


INT8 = frozenset({DType.i8})
#: Data movement on int8 tensors: views (a new shape over the same DRAM bytes) and DMA moves.
MOVES = DATA_MOVEMENT | DMA_MOVES


def float_reason(node: Node, cx: CheckContext | None = None) -> str | None:
    """Float nodes (and the float <-> int8 boundary) run on ref: the array computes on int8."""
    values = [*node.inputs, *node.outputs]
    if node.op in BOUNDARY or any(v.type.dtype.is_float for v in values):
        return "float op: runs on ref"
    return None


#: What every node must pass before its op's lowering is tried. An empty tensor leaves the array
#: nothing to compute: its program would wait forever for a token (found by the graph fuzzer).
CHECKS = (float_reason, checks.static_shapes, checks.nonempty)

#: The kit's lowering table (its keys are the coverage): ``lower(node, cx)`` is the node's
#: `Layer`. The pack claims by trial lowering (``KernelPack(probe=True)``), so a claim never
#: breaks on a tiling limit only lowering sees.
TABLE: dict[str, Lowering] = {
    "qconv2d": Lowering(program_layer(qconv2d_program, (0, "x"))),
    "qlinear": Lowering(program_layer(qlinear_program, (0, "x"))),
    "qmatmul": Lowering(program_layer(_qmatmul, (0, "a"), (1, "b"))),
    "qadd": Lowering(program_layer(_qadd, (0, "a"), (1, "b"))),
    "qmax_pool2d": Lowering(program_layer(_qmax_pool2d, (0, "x"))),
    "qavg_pool2d": Lowering(program_layer(_qavg_pool2d, (0, "x"))),
    "qadaptive_avg_pool2d": Lowering(program_layer(_qadaptive_avg_pool2d, (0, "x"))),
    **SFU_LOWERINGS,
    **{op: Lowering(move_layer, INT8) for op in sorted(MOVES)},
}
