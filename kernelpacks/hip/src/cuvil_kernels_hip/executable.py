"""The device side of a lowered partition: one arena, bound launches, graph capture and replay.

``HipExecutable`` is built once per partition from a :class:`KernelPlan`: it compiles (or loads
from the on-disk cache) every module, allocates the arena, uploads constants, and keeps an
``ExecutionContext`` whose launches name arena buffers. ``run`` uploads the inputs, launches (on
CUDA the first run captures the whole partition into a CUDA graph, later runs replay it; on ROCm
launches are issued one by one and ``metrics()`` says so) and downloads the outputs.
``run_async`` enqueues the same work on the stream and returns a Future completed when the stream
reaches it. Runs are serialized: the arena is shared state.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_kernels_hip import runtime
from cuvil_kernels_hip.planning import KernelPlan
from cuvil_ref.errors import InputError
from cuvil_ref.plugin.types import Executable


def to_device_bits(array: np.ndarray) -> np.ndarray:
    """A contiguous host array CuPy can copy (bfloat16 travels as its uint16 bits)."""
    a = np.ascontiguousarray(array)
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


class HipExecutable(Executable):
    """A partition resident on the GPU; see the module docstring."""

    def __init__(self, plan: KernelPlan, use_graph: bool = True) -> None:
        self.plan = plan
        self.arena = runtime.Arena(plan.arena_bytes, plan.buffers)
        for name, array in plan.constants.items():
            self.arena.view(name).set(to_device_bits(array))
        self.context = runtime.ExecutionContext(self.arena, list(plan.launches), use_graph)
        _ = self.context.stream  # compile/load every module now, not on the first call
        self._lock = threading.Lock()
        self._out_dtypes = [np.dtype(plan.buffers[n].dtype) for n in plan.outputs]
        self.calls = 0

    def _enqueue(self, inputs: Sequence[np.ndarray]) -> None:
        if len(inputs) != len(self.plan.inputs):
            raise InputError(
                f"hip partition takes {len(self.plan.inputs)} inputs, got {len(inputs)}"
            )
        stream = self.context.stream
        for name, array in zip(self.plan.inputs, inputs, strict=True):
            spec = self.plan.buffers[name]
            if tuple(np.shape(array)) != spec.shape:
                raise InputError(
                    f"hip partition input %{name}: shape {np.shape(array)}, expected {spec.shape}"
                )
            host = to_device_bits(np.asarray(array, dtype=np.dtype(spec.dtype)))
            self.arena.view(name).set(host, stream=stream)
        self.context.launch()

    def _download(self) -> list[np.ndarray]:
        stream = self.context.stream
        outs = []
        for name, dtype in zip(self.plan.outputs, self._out_dtypes, strict=True):
            outs.append(self.arena.view(name).get(stream=stream).view(dtype))
        return outs

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            self._enqueue(inputs)
            outs = self._download()
            self.context.stream.synchronize()
            self.calls += 1
        return outs

    def run_async(self, inputs: Sequence[np.ndarray]) -> concurrent.futures.Future:
        """Launch now on the stream; a helper thread completes the Future when it finishes."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._lock.acquire()
        try:
            self._enqueue(list(inputs))
            event = self.context.stream.record()
        except BaseException:
            self._lock.release()
            raise

        def finish() -> None:
            try:
                event.synchronize()
                future.set_result(self._download())
                self.calls += 1
            except BaseException as exc:  # the Future carries the error to the caller
                future.set_exception(exc)
            finally:
                self._lock.release()

        threading.Thread(target=finish, name="cuvil-hip-async", daemon=True).start()
        return future

    def metrics(self) -> dict[str, Any]:
        return plan_metrics(self.plan) | {
            "calls": self.calls,
            "graph_replay": self.context.graph_replay,
            "device_notes": list(self.context.notes),
        }


def plan_metrics(plan: KernelPlan) -> dict[str, Any]:
    """Counters of a plan for ``cm.report()["metrics"]`` (also used by the dry run)."""
    return {
        "launches": len(plan.launches),
        "unique_kernels": len(plan.sources),
        "arena_bytes": plan.arena_bytes,
        "loop_unroll_factor": plan.options.loop_unroll_factor,
        "block_size": plan.options.block_size,
        "notes": list(plan.notes),
    }
