"""`NpuExecutable`: a lowered partition, simulated layer by layer on every run.

Layers run in graph order; each reads its input tensors from DRAM and writes its output back, and
the executable passes those DRAM tensors between layers (logical NCHW arrays on the host side).
Metrics are those of the last run: per layer (`layer_metrics` plus node name and op) and summed.

Layouts. Conv and pool programs keep activations channels-last (NHWC) in DRAM; linear, matmul
and data-movement ops read and write plain row-major tensors, and qadd works in whatever layout
its inputs share. Where a consumer needs the other layout and the two differ in byte order
(rank 4 with C > 1 and H * W > 1), a relayout is charged as its own layer entry: the tensor is
read and written once over DRAM (`2 * bytes / bandwidth + latency` cycles, DRAM energy), with
`"modeled": True`. Partition inputs and outputs cross at the host boundary in the layout needed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.energy import energy_fields, power_fields, static_mw
from cuvil_kernels_npu_sim.layer import Layer
from cuvil_kernels_npu_sim.lowering_transformer import DMA_MOVES, dma_move, dma_move_metrics
from cuvil_kernels_npu_sim.metrics import ENERGY_KEYS, layer_metrics, trace_text
from cuvil_kernels_npu_sim.simulator import simulate
from cuvil_ref.ops import families
from cuvil_ref.plugin.types import Executable

NHWC, PLAIN = "NHWC", "plain"
_NHWC_OPS = frozenset({"qconv2d", "qconv2d+qadd"}) | families.QUANT_POOLS


def _same_bytes(shape: tuple[int, ...]) -> bool:
    """NHWC and NCHW store this shape in the same byte order."""
    return len(shape) != 4 or shape[1] == 1 or shape[2] * shape[3] == 1


def _relayout_metrics(name: str, shape: tuple[int, ...], cfg: NpuConfig) -> dict[str, Any]:
    moved = 2 * int(np.prod(shape, dtype=np.int64))
    cycles = -(-moved // cfg.dram_bytes_per_cycle) + cfg.dram_latency
    energy = energy_fields({"dram": moved * cfg.energy.dram_pj_per_byte}, cycles, cfg)
    seconds = cycles / (cfg.clock_ghz * 1e9)
    return {
        "node": name,
        "op": "relayout",
        "name": f"{name}.relayout",
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
        "dram_busy_cycles": -(-moved // cfg.dram_bytes_per_cycle),
        "bound": "memory",
        "utilization": -(-moved // cfg.dram_bytes_per_cycle) / cycles,
        "roofline_bound": "memory",
    }


def plan_relayouts(layers: Sequence[Layer], shapes: dict[str, tuple[int, ...]]) -> list[list[str]]:
    """Per layer, the input values that must change layout before it runs."""
    stored: dict[str, str] = {}
    plan: list[list[str]] = []
    for layer in layers:
        names = [v for v, _ in layer.inputs]
        if layer.op in _NHWC_OPS:
            want = NHWC
        elif layer.op == "qadd":  # elementwise: follow whichever input already has a layout
            want = next((stored[v] for v in names if v in stored), PLAIN)
        else:
            want = PLAIN
        moves = []
        for name in names:
            have = stored.get(name)  # None: a partition input, written by the host as needed
            if have is not None and have != want and not _same_bytes(shapes[name]):
                moves.append(name)
        plan.append(moves)
        stored[layer.output] = want
    return plan


class NpuExecutable(Executable):
    """Runs `layers` (lowered once) through the simulator on every call."""

    def __init__(
        self,
        layers: Sequence[Layer],
        input_names: Sequence[str],
        output_names: Sequence[str],
        constants: dict[str, np.ndarray],
        config: NpuConfig,
        shapes: dict[str, tuple[int, ...]],
        *,
        sim_mode: str = "timed",
        trace: bool = False,
    ) -> None:
        self.layers = tuple(layers)
        self.input_names = tuple(input_names)
        self.output_names = tuple(output_names)
        self.constants = dict(constants)
        self.config = config
        self.sim_mode = sim_mode
        self.trace = trace
        self.relayouts = plan_relayouts(self.layers, shapes)
        self.shapes = shapes
        self.runs = 0
        self._last: dict[str, Any] = {}

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.input_names):
            raise ValueError(
                f"npu_sim partition takes {len(self.input_names)} inputs "
                f"({', '.join(self.input_names)}), got {len(inputs)}"
            )
        t0 = time.perf_counter()
        env: dict[str, np.ndarray] = dict(self.constants)
        env.update(zip(self.input_names, (np.asarray(x) for x in inputs), strict=True))
        rows: list[dict[str, Any]] = []
        traces: list[str] = []
        random_mode = self.sim_mode == "random"
        for layer, moves in zip(self.layers, self.relayouts, strict=True):
            rows += [_relayout_metrics(v, self.shapes[v], self.config) for v in moves]
            if layer.program is None and layer.op in DMA_MOVES:
                x = env[layer.inputs[0][0]]
                env[layer.output] = dma_move(layer.op, x, layer.attrs, layer.out_shape)
                out_bytes = int(np.prod(layer.out_shape, dtype=np.int64))
                read = out_bytes if layer.op == "slice" else x.size  # a slice reads its part
                rows.append(dma_move_metrics(layer.node, layer.op, read, out_bytes, self.config))
                continue
            if layer.program is None:
                env[layer.output] = np.reshape(env[layer.inputs[0][0]], layer.out_shape)
                rows.append(self._free_row(layer))
                continue
            feeds = {region: env[value] for value, region in layer.inputs}
            try:
                res = simulate(
                    layer.program,
                    feeds,
                    mode=self.sim_mode,
                    seed=self.runs,
                    check_hazards=random_mode,
                    keep_trace=self.trace,
                )
            except Exception as exc:
                exc.add_note(f"while simulating npu_sim layer '%{layer.node}' ({layer.op})")
                raise
            env[layer.output] = res.outputs["y"]
            rows.append({"node": layer.node, "op": layer.op, **layer_metrics(res)})
            if self.trace:
                traces.append(trace_text(res))
        self.runs += 1
        self._last = self._summarize(rows, traces, time.perf_counter() - t0)
        return [env[name] for name in self.output_names]

    def _free_row(self, layer: Layer) -> dict[str, Any]:
        return {
            "node": layer.node,
            "op": layer.op,
            "name": layer.node,
            "cycles": 0,
            "latency_ms": 0.0,
            "roofline_cycles": 0.0,
            "macs": 0,
            "mac_utilization": 0.0,
            "dram_bytes": 0,
            "sram_bytes": 0,
            **energy_fields({}, 0, self.config),
            "instructions": 0,
            "bound": "none",
            "utilization": 0.0,
        }

    def _summarize(
        self, rows: list[dict[str, Any]], traces: list[str], host_seconds: float
    ) -> dict[str, Any]:
        cfg = self.config
        cycles = sum(int(r["cycles"]) for r in rows)
        macs = sum(int(r["macs"]) for r in rows)
        energy = {k: sum(float(r[k]) for r in rows) for k in ENERGY_KEYS}
        seconds = cycles / (cfg.clock_ghz * 1e9)
        out: dict[str, Any] = {
            "target": cfg.name,
            "device": describe_device(cfg),
            "sim_mode": self.sim_mode,
            "runs": self.runs,
            "cycles": cycles,
            "latency_ms": seconds * 1e3,
            "roofline_cycles": sum(float(r["roofline_cycles"]) for r in rows),
            "macs": macs,
            "mac_utilization": macs / max(1, cycles * cfg.peak_macs_per_cycle),
            "dram_bytes": sum(int(r["dram_bytes"]) for r in rows),
            "sram_bytes": sum(int(r["sram_bytes"]) for r in rows),
            **energy,
            **power_fields(energy, seconds),
            "static_power_mw": static_mw(cfg),
            "instructions": sum(int(r["instructions"]) for r in rows),
            "host_seconds": host_seconds,
            "layers": rows,
        }
        if self.trace:
            out["trace"] = "".join(traces)
        return out

    def metrics(self) -> dict[str, Any]:
        """Counters of the last run (empty before the first run, except the layer count)."""
        if not self._last:
            return {"target": self.config.name, "runs": 0, "layers_lowered": len(self.layers)}
        return dict(self._last)


def describe_device(cfg: NpuConfig) -> str:
    return f"{cfg.name} simulator ({cfg.array_rows}x{cfg.array_cols} int8, {cfg.clock_ghz:g} GHz)"
