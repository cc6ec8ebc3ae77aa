"""Target options of `npu-v3` / `npu-v2`: config overrides plus simulation switches.

Every `NpuConfig` field except `name` and `energy` is an option of the same name (`mac_rows`
and `mac_cols` are accepted as aliases of `array_rows`/`array_cols`); energy figures are the
flat options `energy_<field>` (`energy_dram_pj_per_byte`, ...), so options stay JSON scalars.
`sim_mode` picks the simulator's scheduling ("timed": the timing reference; "random": random
interleaving of ready queues with the hazard checker on, a correctness stress mode) and `trace`
records the per-instruction trace into the executable's metrics. `loop_unroll_factor` (an int in
[1, 16], default 1) is the lowering's micro-op loop unrolling (see unroll.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from cuvil_kernels_npu_sim.config import TARGETS, EnergyTable, NpuConfig, config_from_dict
from cuvil_kernels_npu_sim.unroll import UNROLL_MAX
from cuvil_ref.errors import TargetError
from cuvil_ref.plugin.types import OptionSpec

ALIASES = {"mac_rows": "array_rows", "mac_cols": "array_cols"}
SIM_MODES = ("timed", "random")
_SKIP = {"name", "energy"}
_DOCS = {
    "array_rows": "MAC array rows (reduction lanes)",
    "array_cols": "MAC array columns (output channels per fold)",
    "clock_ghz": "clock in GHz (latency_ms and power_w)",
    "inp_bytes": "input scratchpad bytes",
    "wgt_bytes": "weight scratchpad bytes",
    "acc_bytes": "accumulator scratchpad bytes (int32 words * 4)",
    "tbl_bytes": "requantization table bytes",
    "uop_entries": "micro-op table entries",
    "alu_lanes": "vector ALU lanes",
    "alu_latency": "vector ALU pipeline latency (cycles)",
    "dram_bytes_per_cycle": "DRAM bandwidth in bytes per cycle",
    "dram_latency": "DRAM latency in cycles",
    "dram_burst_bytes": "DRAM burst size in bytes",
    "issue_cycles": "cycles to issue one instruction",
    "sfu_div_cycles": "special-function unit: cycles of one row division (per lane)",
    "sfu_sqrt_cycles": "special-function unit: cycles of one integer square root (per lane)",
    "weight_double_buffer": (
        "shadow weight registers: folds chain at max(M, C+1) cycles (False: every fold pays "
        "2R + C + M - 2, SCALE-Sim)"
    ),
    "dw_line_rows": "depthwise line buffer rows (largest kernel height with row reuse)",
    "dw_line_cols": "depthwise line buffer row width in pixels",
    "loop_unroll_factor": (
        f"1..{UNROLL_MAX}: output-row iterations of each GEMM/DWCONV micro-op loop emitted as "
        "separate micro-ops (f x micro-ops within uop_entries, e/f hardware loop iterations); "
        "bit-identical results, never fewer cycles on this weight-stationary array"
    ),
}
# option -> inclusive range, checked before the config (so the message names the range)
RANGES = {"loop_unroll_factor": (1, UNROLL_MAX)}


def _config_fields() -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(NpuConfig) if f.name not in _SKIP]


def _energy_fields() -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(EnergyTable) if f.name != "process_node"]


def option_specs(target: str) -> tuple[OptionSpec, ...]:
    """The options of `target` with its own config values as defaults."""
    cfg = TARGETS[target]
    specs = [
        OptionSpec(f.name, type(getattr(cfg, f.name)), getattr(cfg, f.name), _DOCS.get(f.name, ""))
        for f in _config_fields()
    ]
    specs += [
        OptionSpec(
            f"energy_{f.name}", float, float(getattr(cfg.energy, f.name)), f"energy: {f.name}"
        )
        for f in _energy_fields()
    ]
    specs += [
        OptionSpec("sim_mode", str, "timed", "simulator scheduling", choices=SIM_MODES),
        OptionSpec("trace", bool, False, "record the instruction trace in metrics()['trace']"),
        OptionSpec(
            "fuse_residual",
            bool,
            True,
            "run a qadd inside the qconv2d/qlinear producing its operand (fusion.py)",
        ),
    ]
    return tuple(specs)


def _check_type(target: str, spec: OptionSpec, value: Any) -> Any:
    if spec.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    bad_type = not isinstance(value, spec.type) or (spec.type is int and isinstance(value, bool))
    if spec.name in RANGES:
        lo, hi = RANGES[spec.name]
        if bad_type or not lo <= value <= hi:
            raise TargetError(
                f"target '{target}': option '{spec.name}' must be an int in [{lo}, {hi}], "
                f"got {value!r}"
            )
    if bad_type:
        raise TargetError(
            f"target '{target}': option '{spec.name}' must be {spec.type.__name__}, got {value!r}"
        )
    if spec.choices is not None and value not in spec.choices:
        raise TargetError(
            f"target '{target}': option '{spec.name}' = {value!r} is not one of "
            f"{list(spec.choices)}"
        )
    return value


def validate_options(target: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Options with defaults filled in; TargetError naming the option for anything invalid.

    The config values are checked by building the config (`config_from_dict`), so sizes the ISA
    cannot address or non-positive sizes are rejected with the library's message.
    """
    specs = {s.name: s for s in option_specs(target)}
    given = dict(options)
    for alias, name in ALIASES.items():
        if alias in given:
            if name in given and given[name] != given[alias]:
                raise TargetError(
                    f"target '{target}': options '{alias}' and '{name}' disagree "
                    f"({given[alias]!r} vs {given[name]!r}); give one of them"
                )
            given[name] = given.pop(alias)
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise TargetError(
            f"target '{target}' has no option(s) {unknown}; accepted options: "
            f"{', '.join(sorted([*specs, *ALIASES]))}"
        )
    out = {name: _check_type(target, s, given.get(name, s.default)) for name, s in specs.items()}
    config_for(target, out)  # raises TargetError for values the NPU cannot have
    return out


def config_for(target: str, options: Mapping[str, Any]) -> NpuConfig:
    """The `NpuConfig` of `target` with the config options applied (other keys are ignored)."""
    overrides: dict[str, Any] = {
        f.name: options[f.name] for f in _config_fields() if f.name in options
    }
    energy = {
        f.name: options[f"energy_{f.name}"]
        for f in _energy_fields()
        if f"energy_{f.name}" in options
    }
    if energy:
        overrides["energy"] = energy
    try:
        return config_from_dict(overrides, base=target)
    except ValueError as exc:
        raise TargetError(f"target '{target}': invalid option value: {exc}") from exc
