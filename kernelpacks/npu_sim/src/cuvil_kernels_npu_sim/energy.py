"""Energy and power of a run: the cited dynamic energies plus leakage, as a nominal figure
with a low-high range.

Dynamic energy counts events (MACs, SRAM and DRAM bytes, ALU operations; config.EnergyTable,
Horowitz ISSCC 2014 at 45 nm). Static power is leakage of what the model has: every on-chip
SRAM (scratchpads, micro-op table, depthwise line buffer) at `leakage_mw_per_kib`, and the MAC
array at `leakage_mw_per_mac`, burned for every cycle of the run. The range:

* low: DRAM at 1.3 nJ / 64 bit (Horowitz's low end, the nominal figure) and leakage x
  `static_low` (low-standby-power cells);
* high: DRAM at 2.6 nJ / 64 bit (`dram_pj_per_byte_high`) and leakage x `static_high`
  (high-performance cells, hot silicon).

What the model leaves out, so "W" covers only the NPU core and its DRAM accesses: DRAM
background, refresh and PHY/IO power; the clock tree and pipeline registers outside the MACs;
the controller, instruction fetch and DMA engines; on-chip interconnect; the host interface;
voltage-regulator losses. On real accelerators these are large (Jouppi et al., ISCA 2017:
a TPU v1 die draws 28 W idle against 40 W busy), so the figures here are lower bounds on a
real chip's power, not estimates of its wall power.
"""

from __future__ import annotations

from collections.abc import Mapping

from cuvil_kernels_npu_sim.config import NpuConfig


def sram_kib(cfg: NpuConfig) -> float:
    """On-chip SRAM the model has, in KiB (scratchpads, micro-op table, line buffer)."""
    total = cfg.inp_bytes + cfg.wgt_bytes + cfg.acc_bytes + cfg.tbl_bytes
    return (total + 12 * cfg.uop_entries + cfg.dw_line_bytes) / 1024


def static_mw(cfg: NpuConfig) -> float:
    """Nominal leakage power in mW."""
    e = cfg.energy
    return e.leakage_mw_per_kib * sram_kib(cfg) + e.leakage_mw_per_mac * cfg.peak_macs_per_cycle


def energy_fields(dynamic: Mapping[str, float], cycles: int, cfg: NpuConfig) -> dict[str, float]:
    """`energy_pj` (dynamic + nominal static), `static_pj`, `energy_pj_low`/`_high`, and the
    matching `power_w`, `power_w_low`, `power_w_high` for a run of `cycles`."""
    e = cfg.energy
    seconds = cycles / (cfg.clock_ghz * 1e9)
    static = static_mw(cfg) * 1e-3 * seconds * 1e12  # pJ
    dyn = sum(dynamic.values())
    dram = dynamic.get("dram", 0.0)
    dram_high = dram * (e.dram_pj_per_byte_high / e.dram_pj_per_byte) if e.dram_pj_per_byte else 0
    out = {
        "energy_pj": dyn + static,
        "static_pj": static,
        "energy_pj_low": dyn + static * e.static_low,
        "energy_pj_high": dyn - dram + dram_high + static * e.static_high,
    }
    return {**out, **power_fields(out, seconds)}


def power_fields(energy: Mapping[str, float], seconds: float) -> dict[str, float]:
    """Average power of `energy` (the `energy_fields` keys) over `seconds`."""
    if not seconds:
        return {"power_w": 0.0, "power_w_low": 0.0, "power_w_high": 0.0}
    return {
        "power_w": energy["energy_pj"] * 1e-12 / seconds,
        "power_w_low": energy["energy_pj_low"] * 1e-12 / seconds,
        "power_w_high": energy["energy_pj_high"] * 1e-12 / seconds,
    }
