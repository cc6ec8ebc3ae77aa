"""The ``cuda`` Executable: lower once, replay pre-bound launches on one stream per run.

For each input-shape signature (one, decided at lowering, when the partition has no symbolic
dims) a :class:`Plan` is built once: device buffers for the inputs, constants uploaded, every node
emitted through the library with launches recorded, every value in its own device buffer. Then
the intermediates move into one arena carved by the memory plan the compiler made for this
partition (used as given, see :mod:`cuvil_kernels_cuda.arena`): the recorded launches are
rebound onto its views; inputs, outputs and whatever the plan does not cover keep their own
buffers. A run then copies the inputs into their buffers, replays the recorded launches (their
arguments bound at record time) on the executable's stream -- or launches the captured CUDA
graph -- and copies the outputs back.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_kernels_cuda import arena, device
from cuvil_kernels_cuda.lower_common import EmitContext
from cuvil_kernels_cuda.lowering import LOWERINGS
from cuvil_ref.errors import TargetError
from cuvil_ref.interpreter import check_input
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.kit import lowering_node
from cuvil_ref.plugin.types import Executable

_WAITER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="cuvil-cuda")


@dataclass
class Plan:
    """Everything one input-shape signature needs at run time, built once."""

    inputs: list[Any]
    launches: list[device.BoundLaunch]
    outputs: list[Any]
    device_bytes: int
    graph: Any = None
    graph_status: str = "off"
    arena: arena.ArenaResult | None = None


@dataclass
class Counters:
    runs: int = 0
    launch_seconds: float = 0.0
    last_launch_seconds: float = 0.0
    bytes_h2d: int = 0
    bytes_d2h: int = 0
    plans_built: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _tuple(v: Any) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, (tuple, list)) else (int(v),)


class CudaExecutable(Executable):
    """A lowered ``cuda`` partition (see the module docstring)."""

    def __init__(self, graph: Graph, options: Mapping[str, Any], memory_plan: MemoryPlan) -> None:
        self.graph = graph
        self.tile = int(options.get("tile", 0) or 0)
        self.use_cuda_graph = bool(options.get("use_cuda_graph", False))
        self.unroll = int(options.get("loop_unroll_factor", 1))
        self.memory_plan = memory_plan
        self.planned_arena_bytes = memory_plan.arena_bytes
        self.ctx = device.ExecutionContext()
        self._lock = threading.Lock()
        self._plans: dict[tuple[tuple[int, ...], ...], Plan] = {}
        self.counters = Counters()
        nc = device.cuda()
        self._constants = {
            name: nc.to_device(np.ascontiguousarray(arr)) for name, arr in graph.constants.items()
        }
        if all(isinstance(d, int) for v in graph.inputs for d in v.type.shape):
            shapes = tuple(tuple(int(d) for d in v.type.shape) for v in graph.inputs)
            self._plan_for(shapes, {})

    # -- building --------------------------------------------------------------------------------
    def _plan_for(self, shapes: tuple[tuple[int, ...], ...], bindings: dict[str, int]) -> Plan:
        plan = self._plans.get(shapes)
        if plan is None:
            plan = self._plans[shapes] = self._build(shapes, bindings)
            self.counters.plans_built += 1
        return plan

    def _build(self, shapes: tuple[tuple[int, ...], ...], bindings: dict[str, int]) -> Plan:
        from cuvil_kernels_cuda.kernels import common

        nc = device.cuda()
        # Recording runs every kernel once: zero-filled inputs keep data-dependent kernels
        # (gather, index_select, embedding read their indices) inside their bounds.
        inputs = [
            nc.to_device(np.zeros(s, dtype=v.type.dtype.numpy))
            for v, s in zip(self.graph.inputs, shapes, strict=True)
        ]
        env: dict[str, Any] = dict(self._constants)
        env.update({v.name: b for v, b in zip(self.graph.inputs, inputs, strict=True)})
        cx = EmitContext(bindings, self.tile)
        raw: dict[str, Any] = {}
        spans: list[range] = []
        with common.recording(self.tile, self.unroll) as log:
            for node in self.graph.nodes:
                first = len(log)
                args = [env[v.name] for v in node.inputs]
                with lowering_node("cuda", node):
                    outs = LOWERINGS[node.op].lower(node, args, cx)
                spans.append(range(first, len(log)))
                for v, o in zip(node.outputs, outs, strict=True):
                    shape = cx.shape(v)
                    # Rank-0 results come back as (1,) from some kernels: view them as the IR says.
                    env[v.name] = o if tuple(o.shape) == shape else o.reshape(shape)
                    raw[v.name] = o
        outputs = [env[v.name] for v in self.graph.outputs]
        fixed = [*inputs, *outputs, *self._constants.values()]
        placed = arena.place(self.graph, raw, spans, log, self.memory_plan, fixed)
        launches = [
            device.bind(rec.kernel, _tuple(rec.grid), _tuple(rec.block), rec.args, self.ctx)
            for rec in placed.launches
        ]
        in_arena = set(placed.arena_values)
        nbytes = sum(int(b.nbytes) for b in inputs) + placed.arena_bytes
        nbytes += sum(int(o.nbytes) for name, o in raw.items() if name not in in_arena)
        plan = Plan(inputs, launches, outputs, nbytes, arena=placed)
        if self.use_cuda_graph:
            self._capture(plan)
        return plan

    def _capture(self, plan: Plan) -> None:
        if device.in_simulator():
            plan.graph_status = "unsupported in simulator"
            return
        ok, why = device.graph_support()
        if not ok:
            plan.graph_status = why
            return
        try:
            graph = device.GraphCapture(self.ctx)
            with graph:
                for launch in plan.launches:
                    launch.launch()
            plan.graph, plan.graph_status = graph, "captured"
        except Exception as exc:  # noqa: BLE001 - fall back to replaying launches
            plan.graph_status = f"failed, replaying launches: {type(exc).__name__}: {exc}"

    # -- running ---------------------------------------------------------------------------------
    def _issue(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Queue copies and launches on the stream; outputs are valid after synchronize()."""
        if len(inputs) != len(self.graph.inputs):
            raise TargetError(
                f"target 'cuda': partition takes {len(self.graph.inputs)} inputs, got {len(inputs)}"
            )
        bindings: dict[str, int] = {}
        arrays = [
            np.ascontiguousarray(check_input(v.name, v.type, a, bindings))
            for v, a in zip(self.graph.inputs, inputs, strict=True)
        ]
        plan = self._plan_for(tuple(a.shape for a in arrays), bindings)
        stream = self.ctx.stream
        for buf, arr in zip(plan.inputs, arrays, strict=True):
            if arr.size:
                buf.copy_to_device(arr, stream=stream)
        t0 = time.perf_counter()
        if plan.graph is not None:
            plan.graph.launch()
        else:
            for launch in plan.launches:
                launch.launch()
        spent = time.perf_counter() - t0
        outs = [np.asarray(d.copy_to_host(stream=stream)) for d in plan.outputs]
        c = self.counters
        c.runs += 1
        c.launch_seconds += spent
        c.last_launch_seconds = spent
        c.bytes_h2d += sum(int(a.nbytes) for a in arrays)
        c.bytes_d2h += sum(int(o.nbytes) for o in outs)
        return outs

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            outs = self._issue(inputs)
            self.ctx.synchronize()
        return outs

    def run_async(self, inputs: Sequence[np.ndarray]) -> concurrent.futures.Future:
        """Issue now; the future completes (on a waiter thread) once the stream synchronizes."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._lock.acquire()
        try:
            outs = self._issue(inputs)
        except BaseException as exc:
            self._lock.release()
            future.set_exception(exc)
            return future

        def wait() -> None:
            try:
                self.ctx.synchronize()
                future.set_result(outs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
            finally:
                self._lock.release()

        _WAITER.submit(wait)
        return future

    def metrics(self) -> dict[str, Any]:
        c = self.counters
        plans = list(self._plans.values())
        last = plans[-1] if plans else None
        return {
            "device": device.availability()[1],
            "runs": c.runs,
            "launches_per_run": len(last.launches) if last else 0,
            "host_launch_overhead_s": c.last_launch_seconds,
            "host_launch_overhead_mean_s": c.launch_seconds / c.runs if c.runs else 0.0,
            "cuda_graph": last.graph_status if last else "not built yet",
            "bytes_h2d": c.bytes_h2d,
            "bytes_d2h": c.bytes_d2h,
            "bytes_transferred": c.bytes_h2d + c.bytes_d2h,
            "device_buffer_bytes": last.device_bytes if last else 0,
            "planned_arena_bytes": self.planned_arena_bytes,
            "arena_bytes": last.arena.arena_bytes if last and last.arena else 0,
            "arena_values": len(last.arena.arena_values) if last and last.arena else 0,
            "arena_naive_bytes": last.arena.arena_naive_bytes if last and last.arena else 0,
            "arena_views": len(last.arena.views) if last and last.arena else 0,
            "arena_in_place": len(last.arena.in_place) if last and last.arena else 0,
            "separate_buffers": last.arena.separate_buffers if last and last.arena else 0,
            "plans": len(plans),
            "streams": 1,
            "tile": self.tile or "auto",
            "loop_unroll_factor": self.unroll,
        }
