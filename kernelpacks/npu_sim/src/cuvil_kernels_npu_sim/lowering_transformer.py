"""IR node -> program adapters for the integer transformer ops (qsoftmax, qlayer_norm, qlut)
and the int8 data-movement ops the NPU's DMA engine runs (transpose, permute, slice, expand).

The data-movement ops have no instruction program: like NVDLA's Rubik engine, a 2-D DMA with a
small transpose buffer reads each input byte once and writes each output byte once, so the
executable charges them `(read + written bytes) / dram_bytes_per_cycle + dram_latency` cycles
and DRAM energy (`dma_move_metrics`), and computes their values with numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.energy import energy_fields
from cuvil_kernels_npu_sim.layer import program_layer
from cuvil_kernels_npu_sim.lower_sfu import lower_qlayer_norm, lower_qlut, lower_qsoftmax
from cuvil_kernels_npu_sim.program import Program
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import families
from cuvil_ref.plugin.kit import Lowering

#: Data movement the DMA engine runs on int8 tensors (split has several outputs; a layer has one).
DMA_MOVES = families.REARRANGEMENTS - {"split"}


def _shape(node: Node) -> tuple[int, ...]:
    return tuple(int(d) for d in node.inputs[0].type.shape)


def _qsoftmax(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    rank = node.inputs[0].type.rank
    axis = node.attrs["axis"] % rank if rank else 0
    return lower_qsoftmax(
        _shape(node), node.attrs["table"], axis=axis, target=cfg, name=node.outputs[0].name
    )


def _qlayer_norm(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    a = node.attrs
    keys = ("x_zp", "multiplier", "shift", "sign", "beta_q", "eps_q", "out_zp", "qmin", "qmax")
    return lower_qlayer_norm(
        _shape(node), target=cfg, name=node.outputs[0].name, **{k: a[k] for k in keys}
    )


def _qlut(node: Node, graph: Graph, cfg: NpuConfig) -> Program:
    a = node.attrs
    return lower_qlut(
        _shape(node), a["table"], qmin=a["qmin"], qmax=a["qmax"], target=cfg,
        name=node.outputs[0].name,
    )  # fmt: skip


#: Kit lowerings of the integer transformer ops (part of the pack's table).
LOWERINGS: dict[str, Lowering] = {
    "qsoftmax": Lowering(program_layer(_qsoftmax, (0, "x"))),
    "qlayer_norm": Lowering(program_layer(_qlayer_norm, (0, "x"))),
    "qlut": Lowering(program_layer(_qlut, (0, "x"))),
}


def dma_move(
    op: str, x: np.ndarray, attrs: Mapping[str, Any], out_shape: tuple[int, ...]
) -> np.ndarray:
    """The values of a data-movement op (numpy, independent of the reference interpreter)."""
    if op == "transpose":
        return np.ascontiguousarray(np.swapaxes(x, attrs["dim0"], attrs["dim1"]))
    if op == "permute":
        return np.ascontiguousarray(np.transpose(x, attrs["perm"]))
    if op == "slice":
        index = [slice(None)] * x.ndim
        index[attrs["axis"]] = slice(attrs["start"], attrs["end"], attrs["step"])
        return np.ascontiguousarray(x[tuple(index)])
    return np.ascontiguousarray(np.broadcast_to(x, out_shape))


def dma_move_metrics(node: str, op: str, read: int, written: int, cfg: NpuConfig) -> dict[str, Any]:
    """The modeled cost of one DMA data movement (module docstring)."""
    moved = read + written
    busy = -(-moved // cfg.dram_bytes_per_cycle)
    cycles = busy + cfg.dram_latency
    energy = energy_fields({"dram": moved * cfg.energy.dram_pj_per_byte}, cycles, cfg)
    seconds = cycles / (cfg.clock_ghz * 1e9)
    return {
        "node": node,
        "op": op,
        "name": node,
        "cycles": cycles,
        "latency_ms": seconds * 1e3,
        "roofline_cycles": moved / cfg.dram_bytes_per_cycle,
        "macs": 0,
        "mac_utilization": 0.0,
        "dram_bytes": moved,
        "sram_bytes": 0,
        **energy,
        "instructions": 0,
        "modeled": True,
        "compute_cycles": 0,
        "fill_drain_cycles": 0,
        "dram_busy_cycles": busy,
        "bound": "memory",
        "utilization": busy / cycles,
        "roofline_bound": "memory",
    }
