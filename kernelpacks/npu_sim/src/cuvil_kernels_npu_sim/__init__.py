"""cuvil-kernels-npu-sim: a simulated int8 NPU (`npu-v3`) with its ISA, assembler, bit-exact
cycle/energy simulator and layer lowerings.

    prog = lower_qconv2d(x.shape, w, bias, M, shift, x_zp=zx, out_zp=zy, padding=1)
    res = simulate(prog, {"x": x})          # res.outputs["y"], res.stats
    layer_metrics(res)                      # cycles, roofline_cycles, energy_pj, ...
"""

from __future__ import annotations

from cuvil_kernels_npu_sim.asm import assemble, disassemble, format_insn, parse_program
from cuvil_kernels_npu_sim.config import (
    NPU_V2,
    NPU_V3,
    TARGETS,
    EnergyTable,
    NpuConfig,
    config_from_dict,
    get_config,
)
from cuvil_kernels_npu_sim.errors import (
    AccumulatorOverflowError,
    DeadlockError,
    HazardError,
    NpuSimError,
    ScratchpadBoundsError,
)
from cuvil_kernels_npu_sim.isa import Insn, Op, decode, encode
from cuvil_kernels_npu_sim.lower_conv import lower_qconv2d, lower_qlinear, lower_qmatmul
from cuvil_kernels_npu_sim.lower_eltwise import lower_qadd
from cuvil_kernels_npu_sim.lower_pool import (
    avg_pool_counts,
    lower_qadaptive_avg_pool2d,
    lower_qavg_pool2d,
    lower_qmax_pool2d,
)
from cuvil_kernels_npu_sim.metrics import layer_metrics, program_metrics, trace_text
from cuvil_kernels_npu_sim.program import Program, Region
from cuvil_kernels_npu_sim.simulator import SimResult, Stats, simulate

__all__ = [
    "NPU_V2",
    "NPU_V3",
    "TARGETS",
    "AccumulatorOverflowError",
    "DeadlockError",
    "EnergyTable",
    "HazardError",
    "Insn",
    "NpuConfig",
    "NpuSimError",
    "Op",
    "Program",
    "Region",
    "ScratchpadBoundsError",
    "SimResult",
    "Stats",
    "assemble",
    "avg_pool_counts",
    "config_from_dict",
    "decode",
    "disassemble",
    "encode",
    "format_insn",
    "get_config",
    "layer_metrics",
    "lower_qadaptive_avg_pool2d",
    "lower_qadd",
    "lower_qavg_pool2d",
    "lower_qconv2d",
    "lower_qlinear",
    "lower_qmatmul",
    "lower_qmax_pool2d",
    "parse_program",
    "program_metrics",
    "simulate",
    "trace_text",
]
