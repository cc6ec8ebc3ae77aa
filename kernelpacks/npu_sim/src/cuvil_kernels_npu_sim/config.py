"""Target specifications of the simulated int8 NPU (`npu-v3`, `npu-v2`) and their overrides.

A target is a frozen `NpuConfig`; every size, rate and energy figure the lowering, the tiler and the
simulator use comes from it, so a config is really a parameter (`npu-v2` is a smaller array with
smaller buffers). `config_from_dict` builds one from a base target plus overrides and validates it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_kernels_npu_sim.unroll import UNROLL_MAX


@dataclass(frozen=True)
class EnergyTable:
    """Energy per event in picojoules, with the process node and the source of each figure.

    All figures are Horowitz, "Computing's energy problem", ISSCC 2014, 45 nm, 0.9 V:
    * `mac_pj`: 8-bit integer multiply 0.2 pJ + 32-bit integer add 0.1 pJ (int8 MAC, int32 acc).
    * `sram_pj_per_byte`: 32 KB SRAM read of 64 bits = 20 pJ -> 2.5 pJ/byte (scratchpads are
      built from ~32 KB banks, so a bank access is what is paid).
    * `dram_pj_per_byte`: DRAM access of 64 bits = 1.3-2.6 nJ; the low end 1.3 nJ -> 162.5 pJ/byte.
    * `alu_pj_per_op`: 32-bit integer add 0.1 pJ (add, max, min, shift, clamp, move).
    * `alu_mul_pj`: 32-bit integer multiply 3.1 pJ (MUL, and each multiply of a requantization).
    * `dram_pj_per_byte_high`: the high end, 2.6 nJ / 64 bit = 325 pJ/byte (the range's top).

    Leakage (energy.py) is an order-of-magnitude figure for 45 nm, not a measurement:
    * `leakage_mw_per_kib`: SRAM leakage 10 uW per KiB (CACTI-class 45 nm arrays; low-standby-
      power cells leak about 10x less, high-performance cells about 4x more: `static_low`,
      `static_high` scale it for the range).
    * `leakage_mw_per_mac`: 2 uW per int8 MAC unit with its int32 accumulator and registers.
    """

    mac_pj: float = 0.3
    sram_pj_per_byte: float = 2.5
    dram_pj_per_byte: float = 162.5
    alu_pj_per_op: float = 0.1
    alu_mul_pj: float = 3.1
    dram_pj_per_byte_high: float = 325.0
    leakage_mw_per_kib: float = 0.01
    leakage_mw_per_mac: float = 0.002
    static_low: float = 0.1
    static_high: float = 4.0
    process_node: str = "45 nm (Horowitz, ISSCC 2014)"


@dataclass(frozen=True)
class NpuConfig:
    """One simulated NPU. Sizes are in bytes unless the name says otherwise.

    The MAC array is weight-stationary, `array_rows` x `array_cols` int8 MACs with int32
    accumulators. `weight_double_buffer=True` gives every PE a shadow weight register: an
    instruction that sets `g_wdb = 1` chains its folds (the next fold's weights load over the
    weight bus while the current one streams, and its wavefront follows at max(M, C + 1) cycles;
    see timing.py). Without it (or with `g_wdb = 0`) every fold pays preload + fill + drain,
    2R + C + M - 2, the SCALE-Sim weight-stationary model.

    The depthwise datapath has a line buffer (Eyeriss-style row reuse, as in Ethos-U / NVDLA
    depthwise engines): `dw_line_rows` rows of `dw_line_cols` pixels x `array_cols` channels of
    int8 (`dw_line_bytes`; 7 x 128 x 32 = 28 KiB on npu-v3). A DWCONV micro-op with `g_kr` kernel
    rows streams each input pixel of a channel fold once from INP; the line buffer replays the
    kh - 1 rows above it to the other kernel rows' taps (see machine.py).

    `loop_unroll_factor` (1..16) is a lowering choice, not hardware: how many iterations of each
    GEMM/DWCONV instruction's output-row loop are emitted as separate micro-ops (unroll.py).
    """

    name: str = "npu-v3"
    array_rows: int = 32
    array_cols: int = 32
    clock_ghz: float = 1.0
    inp_bytes: int = 256 * 1024
    wgt_bytes: int = 512 * 1024
    acc_bytes: int = 256 * 1024
    tbl_bytes: int = 16 * 1024
    uop_entries: int = 4096
    alu_lanes: int = 32
    alu_latency: int = 4
    dram_bytes_per_cycle: int = 32
    dram_latency: int = 100
    dram_burst_bytes: int = 64
    issue_cycles: int = 2
    weight_double_buffer: bool = True  # shadow weight registers (timing.py)
    dw_line_rows: int = 7
    dw_line_cols: int = 128
    loop_unroll_factor: int = 1  # lowering: micro-op copies per GEMM/DWCONV body (unroll.py)
    sfu_div_cycles: int = 34  # special-function unit: one 64/32-bit divide per lane (radix 4)
    sfu_sqrt_cycles: int = 34  # special-function unit: one integer square root per lane
    energy: EnergyTable = field(default_factory=EnergyTable)

    @property
    def acc_words(self) -> int:
        return self.acc_bytes // 4

    @property
    def tbl_words(self) -> int:
        return self.tbl_bytes // 4

    @property
    def dw_line_bytes(self) -> int:
        """Depthwise line buffer size: rows x pixels x array_cols channels of int8."""
        return self.dw_line_rows * self.dw_line_cols * self.array_cols

    @property
    def peak_macs_per_cycle(self) -> int:
        return self.array_rows * self.array_cols


NPU_V3 = NpuConfig()
NPU_V2 = NpuConfig(
    name="npu-v2",
    array_rows=16,
    array_cols=16,
    clock_ghz=0.8,
    inp_bytes=64 * 1024,
    wgt_bytes=128 * 1024,
    acc_bytes=64 * 1024,
    tbl_bytes=8 * 1024,
    uop_entries=2048,
    alu_lanes=16,
    dram_bytes_per_cycle=16,
    dw_line_cols=64,
)
TARGETS: dict[str, NpuConfig] = {"npu-v3": NPU_V3, "npu-v2": NPU_V2}

# Largest sizes the ISA's address fields can reach (see isa.py): scratchpads are addressed in
# elements (bytes for INP/WGT, int32 words for ACC/TBL).
_FIELD_LIMITS = {
    "inp_bytes": 1 << 20,
    "wgt_bytes": 1 << 20,
    "acc_bytes": 4 << 16,
    "tbl_bytes": 4 << 16,
    "uop_entries": 1 << 12,
}


def _validate(cfg: NpuConfig) -> NpuConfig:
    ints = (
        "array_rows",
        "array_cols",
        "inp_bytes",
        "wgt_bytes",
        "acc_bytes",
        "tbl_bytes",
        "uop_entries",
        "alu_lanes",
        "dram_bytes_per_cycle",
        "dram_burst_bytes",
        "dw_line_rows",
        "dw_line_cols",
    )
    for name in ints:
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(
                f"npu config {cfg.name!r}: {name} must be a positive int, got {value!r}"
            )
    for name in (
        "alu_latency",
        "dram_latency",
        "issue_cycles",
        "sfu_div_cycles",
        "sfu_sqrt_cycles",
    ):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"npu config {cfg.name!r}: {name} must be an int >= 0, got {value!r}")
    if not isinstance(cfg.clock_ghz, (int, float)) or cfg.clock_ghz <= 0:
        raise ValueError(f"npu config {cfg.name!r}: clock_ghz must be > 0, got {cfg.clock_ghz!r}")
    for name, limit in _FIELD_LIMITS.items():
        if getattr(cfg, name) > limit:
            raise ValueError(
                f"npu config {cfg.name!r}: {name}={getattr(cfg, name)} exceeds what the ISA can "
                f"address ({limit}); use at most {limit}"
            )
    for name in ("acc_bytes", "tbl_bytes"):
        if getattr(cfg, name) % 4:
            raise ValueError(f"npu config {cfg.name!r}: {name} must be a multiple of 4 (int32)")
    f = cfg.loop_unroll_factor
    if not isinstance(f, int) or isinstance(f, bool) or not 1 <= f <= UNROLL_MAX:
        raise ValueError(
            f"npu config {cfg.name!r}: loop_unroll_factor must be an int in [1, {UNROLL_MAX}], "
            f"got {f!r}"
        )
    if not isinstance(cfg.weight_double_buffer, bool):
        raise ValueError(f"npu config {cfg.name!r}: weight_double_buffer must be a bool")
    for f in dataclasses.fields(cfg.energy):
        value = getattr(cfg.energy, f.name)
        if f.name != "process_node" and (not isinstance(value, (int, float)) or value < 0):
            raise ValueError(
                f"npu config {cfg.name!r}: energy.{f.name} must be >= 0, got {value!r}"
            )
    return cfg


def config_from_dict(overrides: Mapping[str, Any], base: str | NpuConfig = "npu-v3") -> NpuConfig:
    """Return `base` (a target name or config) with `overrides` applied and validated.

    `overrides` may hold a `"target"` key naming the base and an `"energy"` dict. Unknown keys and
    bad values raise ValueError listing what is accepted.
    """
    items = dict(overrides)
    base = items.pop("target", base)
    if isinstance(base, str):
        if base not in TARGETS:
            raise ValueError(f"unknown npu target {base!r}; known targets: {sorted(TARGETS)}")
        base = TARGETS[base]
    known = {f.name for f in dataclasses.fields(NpuConfig)}
    unknown = sorted(set(items) - known)
    if unknown:
        raise ValueError(f"unknown npu config keys {unknown}; accepted keys: {sorted(known)}")
    energy = items.pop("energy", None)
    if energy is not None:
        if not isinstance(energy, Mapping):
            raise ValueError("npu config key 'energy' must be a dict of EnergyTable fields")
        e_known = {f.name for f in dataclasses.fields(EnergyTable)}
        e_unknown = sorted(set(energy) - e_known)
        if e_unknown:
            raise ValueError(f"unknown energy keys {e_unknown}; accepted keys: {sorted(e_known)}")
        items["energy"] = dataclasses.replace(base.energy, **energy)
    return _validate(dataclasses.replace(base, **items))


def get_config(target: str | NpuConfig | Mapping[str, Any] = "npu-v3") -> NpuConfig:
    """Resolve a target name, a config, or an override dict into a validated `NpuConfig`."""
    if isinstance(target, NpuConfig):
        return _validate(target)
    if isinstance(target, str):
        return config_from_dict({}, base=target)
    return config_from_dict(target)
