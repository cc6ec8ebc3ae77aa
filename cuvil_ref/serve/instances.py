"""Execution contexts: one compiled program and one worker thread per model instance.

The event loop never runs a model: ``Instance.run`` hands the batch to the instance's own
thread and awaits it. Each instance compiles its own program (packs may keep per-program
buffers, such as the memory plan's arena), so two instances never share mutable state and run
truly in parallel wherever the executable releases the GIL (numpy's BLAS and most array
kernels do; Python-level loops such as the npu-v3 simulator's do not).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.lowering.program import CompiledProgram


class Instance:
    """One execution context of a model version."""

    def __init__(self, program: CompiledProgram, label: str) -> None:
        self.program = program
        self.label = label
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"cuvil-exec-{label}"
        )
        self.busy_seconds = 0.0
        self.batches = 0

    def run_sync(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self._timed(arrays)[0]

    def _timed(self, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
        start = time.perf_counter()
        try:
            return self.program.run(list(arrays)), time.perf_counter() - start
        finally:
            self.busy_seconds += time.perf_counter() - start
            self.batches += 1

    async def run(self, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """(outputs, seconds the program ran) -- the time on the worker thread alone, without
        the hand-off to and from the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._timed, arrays)

    def device_metrics(self) -> dict[str, Any]:
        """The pack's metrics for the partitions on the model's own target (for utilization)."""
        out: dict[str, Any] = {}
        for lp in self.program.lowered:
            if lp.partition.target == self.program.target.name:
                try:
                    out.update(lp.executable.metrics() or {})
                except Exception:  # a pack's metrics must never break a scrape
                    continue
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True)
