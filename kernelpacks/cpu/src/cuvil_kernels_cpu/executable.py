"""The ``cpu`` Executable: lower once, then run a list of pre-bound kernel calls.

At lowering (per input-shape signature; once, when the partition's shapes are static) the
partition becomes a :class:`~cuvil_kernels_cpu.lowering.context.Program` -- weights packed,
algorithms chosen -- its buffers are placed in one arena by the memory plan
(:mod:`cuvil_kernels_cpu.arena`) and every kernel is compiled (or loaded from Numba's on-disk
cache) before the first call. A run copies the inputs in, makes the calls, and copies the
outputs out; the kernels release the GIL, so two threads running the same module proceed in
parallel, each on its own arena instance (taken from a free list, a new one made on demand).

Every call is timed (two ``perf_counter`` reads per step, well under a microsecond); the means
make the per-layer table in ``metrics()["layers"]``.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_kernels_cpu import arena, streams
from cuvil_kernels_cpu.lowering import lower_program
from cuvil_kernels_cpu.lowering.context import Program
from cuvil_kernels_cpu.team import Team
from cuvil_ref.errors import CuvilError, TargetError
from cuvil_ref.interpreter import check_input
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.types import Executable

_ASYNC = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="cuvil-cpu"
)


def max_threads() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def resolve_threads(requested: int) -> int:
    """0 means every core the process may use."""
    return max_threads() if requested <= 0 else int(requested)


@dataclass
class Compiled:
    """One signature's program, its placement, its arena instances and its timings."""

    program: Program
    placement: arena.Placement
    free: list[arena.Instance] = field(default_factory=list)
    instances: int = 0
    seconds: list[float] = field(default_factory=list)
    runs: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    threads: int = 1

    def acquire(self) -> arena.Instance:
        with self.lock:
            if self.free:
                return self.free.pop()
            self.instances += 1
        team = Team(self.threads) if self.threads > 1 else None
        return arena.bind(self.program, self.placement, team)

    def reset_timings(self) -> None:
        self.runs = 0
        self.seconds = [0.0] * len(self.seconds)

    def release(self, inst: arena.Instance) -> None:
        with self.lock:
            self.free.append(inst)


class CpuExecutable(Executable):
    """A lowered ``cpu`` partition (see the module docstring)."""

    def __init__(
        self, graph: Graph, options: dict[str, Any], memory_plan: MemoryPlan | None = None
    ) -> None:
        self.graph = graph
        self.threads = resolve_threads(int(options.get("threads", 0) or 0))
        self.options = dict(options)
        self.options["threads"] = self.threads
        # Weights packed once per partition, shared with the batch streams' children.
        self.options["_packed_cache"] = options.get("_packed_cache") or {}
        self.batch_split = str(options.get("batch_split", "auto"))
        self._split_lock = threading.Lock()
        self._decisions: dict[tuple[tuple[int, ...], ...], streams.Decision] = {}
        # The host's plan holds for the static shapes; other signatures are planned per binding.
        self.memory_plan = memory_plan
        self._compiled: dict[tuple[tuple[int, ...], ...], Compiled] = {}
        self._lock = threading.Lock()
        self.compile_stats: dict[str, float] = {"lower_seconds": 0.0, "kernel_seconds": 0.0}
        if all(isinstance(d, int) for v in graph.inputs for d in v.type.shape):
            shapes = tuple(tuple(int(d) for d in v.type.shape) for v in graph.inputs)
            self._compiled_for(shapes, {}, planned=True)
            self._decision_for(shapes)

    # -- building --------------------------------------------------------------------------------
    def _compiled_for(
        self, shapes: tuple[tuple[int, ...], ...], bindings: dict[str, int], planned: bool = False
    ) -> Compiled:
        comp = self._compiled.get(shapes)
        if comp is not None:
            return comp
        with self._lock:
            comp = self._compiled.get(shapes)
            if comp is None:
                comp = self._build(bindings, planned)
                self._compiled[shapes] = comp
        return comp

    def _build(self, bindings: dict[str, int], planned: bool) -> Compiled:
        t0 = time.perf_counter()
        program = lower_program(self.graph, bindings, self.options)
        plan = self.memory_plan
        if not planned or plan is None:
            from cuvil_ref.passes import plan_memory

            plan = plan_memory(self.graph, bindings)
        placement = arena.place(program, plan)
        comp = Compiled(program, placement, seconds=[0.0] * len(program.steps),
                        threads=self.threads)  # fmt: skip
        inst = comp.acquire()
        t1 = time.perf_counter()
        _compile_kernels(program, inst)
        t2 = time.perf_counter()
        comp.release(inst)
        self.compile_stats["lower_seconds"] += t1 - t0
        self.compile_stats["kernel_seconds"] += t2 - t1
        return comp

    def _decision_for(self, shapes: tuple[tuple[int, ...], ...]) -> streams.Decision:
        """Whether this signature runs as batch streams (:mod:`cuvil_kernels_cpu.streams`)."""
        hit = self._decisions.get(shapes)
        if hit is not None:
            return hit
        with self._split_lock:
            hit = self._decisions.get(shapes)
            if hit is None:
                hit = self._decide(shapes)
                self._decisions[shapes] = hit
        return hit

    def _decide(self, shapes: tuple[tuple[int, ...], ...]) -> streams.Decision:
        static = all(isinstance(d, int) for v in self.graph.inputs for d in v.type.shape)
        if self.batch_split == "off" or not static:
            why = "batch_split=off" if self.batch_split == "off" else "symbolic input dims"
            return streams.Decision(None, {"split": False, "why": why})
        t0 = time.perf_counter()
        child_opts = {**self.options, "threads": 1, "batch_split": "off"}
        comp = self._compiled_for(shapes, {}, planned=True)
        decision = streams.decide(
            self.batch_split, self.graph, shapes, self.threads,
            lambda g: CpuExecutable(g, child_opts),
            lambda arrays: self._run_whole(comp, arrays),
            [v.type.dtype.numpy for v in self.graph.inputs],
        )  # fmt: skip
        for c in [comp, *(decision.streams.children.values() if decision.streams else ())]:
            c.reset_timings()  # the layer table counts the user's runs only
        self.compile_stats["batch_split_seconds"] = (
            self.compile_stats.get("batch_split_seconds", 0.0) + time.perf_counter() - t0
        )
        return decision

    def reset_timings(self) -> None:
        for comp in self._compiled.values():
            comp.reset_timings()

    # -- running ---------------------------------------------------------------------------------
    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.graph.inputs):
            raise TargetError(
                f"target 'cpu': partition takes {len(self.graph.inputs)} inputs, got {len(inputs)}"
            )
        bindings: dict[str, int] = {}
        arrays = [
            check_input(v.name, v.type, a, bindings)
            for v, a in zip(self.graph.inputs, inputs, strict=True)
        ]
        shapes = tuple(tuple(a.shape) for a in arrays)
        comp = self._compiled_for(shapes, bindings)
        split = self._decision_for(shapes).streams
        if split is not None:
            return split.run(arrays)
        return self._run_whole(comp, arrays)

    def _run_whole(self, comp: Compiled, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        inst = comp.acquire()
        seconds = comp.seconds
        team = inst.team
        i = 0
        try:
            for buf, a in zip(inst.inputs, arrays, strict=True):
                np.copyto(buf, a)
            t = time.perf_counter()
            for i, (call, work) in enumerate(zip(inst.calls, inst.works, strict=True)):
                if work is None:
                    call()
                else:
                    work[0] = 0
                    if team is None:
                        call()
                    else:
                        team.run(call, work)
                now = time.perf_counter()
                seconds[i] += now - t
                t = now
            outs = [np.array(o, copy=True) for o in inst.outputs]
        except CuvilError:
            raise
        except Exception as exc:
            step = comp.program.steps[i]
            where = f" (at {step.source})" if step.source else ""
            raise TargetError(
                f"target 'cpu': kernel {step.algo} of %{step.node} = {step.op}{where} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            comp.release(inst)
        comp.runs += 1
        return outs

    def run_async(self, inputs: Sequence[np.ndarray]) -> concurrent.futures.Future:
        """Run on the pack's worker pool; the kernels release the GIL meanwhile."""
        return _ASYNC.submit(self.run, list(inputs))

    # -- reporting -------------------------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        from cuvil_kernels_cpu.kernels import isa

        comps = list(self._compiled.values())
        last = comps[-1] if comps else None
        out: dict[str, Any] = {
            "device": isa.describe(),
            "threads": self.threads,
            "conv_algorithm": self.options.get("conv_algorithm", "auto"),
            "signatures": len(comps),
            "compile": {k: round(v, 4) for k, v in self.compile_stats.items()},
        }
        if last is None:
            return out
        out.update(
            {
                "runs": last.runs,
                "steps_per_run": len(last.program.steps),
                "arena": last.placement.report(),
                "arena_instances": last.instances,
                "algorithms": _histogram(s.algo for s in last.program.steps),
                "choices": last.program.choices,
                "layers": layer_table(last),
            }
        )
        decision = self._decisions.get(next(reversed(self._compiled)))
        if decision is not None:
            out["batch_split"] = decision.record
            if decision.streams is not None:  # the runs went to the streams' children
                child = decision.streams.first_child().metrics()
                out["layers"] = child.get("layers", [])
                out["layers_are"] = "per stream (one sub-batch, one thread)"
                out["runs"] = child.get("runs", 0)
        return out


def layer_table(comp: Compiled) -> list[dict[str, Any]]:
    """One row per step: mean milliseconds per run, share of the run, GFLOP/s, algorithm."""
    runs = max(comp.runs, 1)
    total = sum(comp.seconds) or 1.0
    rows = []
    for step, sec in zip(comp.program.steps, comp.seconds, strict=True):
        mean = sec / runs
        rows.append(
            {
                "node": step.node,
                "op": step.op,
                "algorithm": step.algo,
                "ms": round(mean * 1e3, 4),
                "share": round(sec / total, 4),
                "gflops": round(step.flops / mean / 1e9, 2) if mean > 0 and step.flops else 0.0,
                "source": step.source,
            }
        )
    return rows


def _histogram(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _compile_kernels(program: Program, inst: arena.Instance) -> None:
    """Compile (or load from Numba's disk cache) every kernel for its bound argument types."""
    import numba
    from numba.core.registry import CPUDispatcher

    for call in inst.calls:
        fn = call.func  # type: ignore[attr-defined]
        if isinstance(fn, CPUDispatcher):
            sig = tuple(numba.typeof(a) for a in call.args)  # type: ignore[attr-defined]
            fn.compile(sig)
