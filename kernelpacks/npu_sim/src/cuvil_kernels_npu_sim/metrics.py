"""Per-layer and per-program metrics and the instruction trace dump."""

from __future__ import annotations

from collections.abc import Sequence

from cuvil_kernels_npu_sim.energy import energy_fields, power_fields
from cuvil_kernels_npu_sim.simulator import SimResult

ENERGY_KEYS = ("energy_pj", "static_pj", "energy_pj_low", "energy_pj_high")


def bound_of(compute: int, fill: int, dram: int) -> str:
    """What bounds a layer: "memory" when the DRAM channel is busier than the compute queue
    (useful compute plus fill/drain), else the larger of "compute" and "fill/drain"."""
    if dram >= compute + fill:
        return "memory"
    return "fill/drain" if fill > compute else "compute"


def layer_metrics(result: SimResult) -> dict[str, object]:
    """cycles, latency_ms, roofline_cycles (max(MACs / peak, must-touch DRAM bytes / bandwidth)),
    mac_utilization (useful MACs / (cycles * array size)), dram/sram bytes, energy and power
    with their low-high range (energy.py), and
    what bounds the layer: `compute_cycles` (array streaming + vector ALU), `fill_drain_cycles`
    (array preload, fill/drain, wavefront stalls), `dram_busy_cycles`; `bound` names the
    largest (`bound_of`) and `utilization` is that resource's busy fraction (MACs for compute
    and fill/drain on the array, lanes for ALU layers, bandwidth for memory)."""
    program, stats = result.program, result.stats
    cfg = program.config
    energy = energy_fields(stats.energy_pj, stats.cycles, cfg)
    seconds = stats.cycles / (cfg.clock_ghz * 1e9)
    cycles = max(1, stats.cycles)
    compute = stats.stream_cycles + stats.alu_cycles
    bound = bound_of(compute, stats.fill_cycles, stats.dram_busy_cycles)
    mac_util = program.macs / (cycles * cfg.peak_macs_per_cycle)
    dram_util = stats.dram_busy_cycles / cycles
    alu_util = stats.alu_cycles / cycles
    util = dram_util if bound == "memory" else mac_util if program.macs else alu_util
    return {
        "name": program.name,
        "cycles": stats.cycles,
        "latency_ms": seconds * 1e3,
        "roofline_cycles": program.roofline_cycles(),
        "macs": program.macs,
        "mac_utilization": program.macs / max(1, stats.cycles * cfg.peak_macs_per_cycle),
        "dram_bytes": stats.dram_bytes,
        "sram_bytes": stats.sram_bytes,
        **energy,
        "energy_by_kind_pj": dict(stats.energy_pj),
        "instructions": stats.instructions,
        "stalls": dict(stats.stalls),
        "compute_cycles": compute,
        "fill_drain_cycles": stats.fill_cycles,
        "dram_busy_cycles": stats.dram_busy_cycles,
        "bound": bound,
        "utilization": util,
        "dram_utilization": dram_util,
        "roofline_bound": (
            "compute"
            if program.macs / cfg.peak_macs_per_cycle
            >= program.compulsory_dram_bytes / cfg.dram_bytes_per_cycle
            else "memory"
        ),
    }


def program_metrics(results: Sequence[SimResult]) -> dict[str, object]:
    """Totals over layers run one after another (cycles add up; utilization and power are
    recomputed from the totals)."""
    layers = [layer_metrics(r) for r in results]
    if not layers:
        raise ValueError("program_metrics: no layer results")
    cfg = results[0].program.config
    cycles = sum(int(m["cycles"]) for m in layers)  # type: ignore[call-overload]
    energy = {k: sum(float(m[k]) for m in layers) for k in ENERGY_KEYS}  # type: ignore[arg-type]
    seconds = cycles / (cfg.clock_ghz * 1e9)
    macs = sum(int(m["macs"]) for m in layers)  # type: ignore[call-overload]
    return {
        "cycles": cycles,
        "latency_ms": seconds * 1e3,
        "roofline_cycles": sum(float(m["roofline_cycles"]) for m in layers),  # type: ignore[arg-type]
        "macs": macs,
        "mac_utilization": macs / max(1, cycles * cfg.peak_macs_per_cycle),
        "dram_bytes": sum(int(m["dram_bytes"]) for m in layers),  # type: ignore[call-overload]
        "sram_bytes": sum(int(m["sram_bytes"]) for m in layers),  # type: ignore[call-overload]
        **energy,
        **power_fields(energy, seconds),
        "layers": layers,
    }


def trace_text(result: SimResult) -> str:
    """One line per executed instruction: index, queue, start and end cycle, text (needs
    `simulate(..., keep_trace=True)`)."""
    if not result.trace and result.stats.instructions:
        raise ValueError("trace_text: run simulate(..., keep_trace=True) to record a trace")
    lines = [f"# {result.program.name}: {result.stats.cycles} cycles"]
    for t in sorted(result.trace, key=lambda e: (e.start, e.index)):
        lines.append(f"{t.index:6d} {t.queue.name:<7s} {t.start:>10d} {t.end:>10d}  {t.text}")
    return "\n".join(lines) + "\n"
