"""The dynamic batcher of one model version: a bounded queue feeding the execution contexts.

Requests wait in one queue, grouped by batch key (the shapes past the batch dim, after bucket
padding). Whenever an instance is free the batcher takes the oldest live request, gathers the
queued requests of the same key up to ``max_batch_size`` rows, waiting at most
``max_queue_delay_us`` after the oldest arrived (less once a preferred size is reached), then
runs the concatenated batch on that instance and splits the outputs back. While every instance
is busy the queue fills, so batches grow exactly when the load needs them to.

The queue is bounded: past ``max_queue_size`` waiting requests ``submit`` raises
:class:`QueueFull` with a Retry-After estimate. A request whose deadline passed is answered with
:class:`DeadlineExceeded` before it is run; a cancelled one is dropped. ``close`` stops taking
requests and drains the queue and the batches in flight.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.serve.config import DynamicBatching
from cuvil_ref.serve.errors import (
    DeadlineExceeded,
    ExecutionError,
    ModelNotReady,
    QueueFull,
    ServeError,
)
from cuvil_ref.serve.instances import Instance
from cuvil_ref.serve.signature import Prepared

log = logging.getLogger("cuvil.serve")


@dataclass(eq=False)
class Pending:
    """A queued request and the times the batcher records for its spans and metrics."""

    prepared: Prepared
    future: asyncio.Future[list[np.ndarray]]
    deadline: float | None = None  # time.monotonic() seconds
    enqueued: float = field(default_factory=time.monotonic)
    started: float = 0.0
    finished: float = 0.0
    batch_rows: int = 0


@dataclass
class BatchObserver:
    """Hooks for metrics: called with (seconds) or (rows) from the event loop."""

    queue_seconds: Callable[[float], None] = lambda s: None
    compute_seconds: Callable[[float], None] = lambda s: None
    batch_rows: Callable[[int], None] = lambda n: None
    queue_depth: Callable[[int], None] = lambda n: None


class Batcher:
    """Forms batches for one model version and runs them on its instances."""

    def __init__(
        self,
        label: str,
        instances: list[Instance],
        max_batch_size: int,
        policy: DynamicBatching,
        observer: BatchObserver | None = None,
    ) -> None:
        self.label = label
        self.instances = instances
        self.max_batch_size = max_batch_size
        self.policy = policy
        self.observer = observer or BatchObserver()
        self._queue: list[Pending] = []
        self._wakeup = asyncio.Event()
        self._free: asyncio.Queue[Instance] = asyncio.Queue()
        for inst in instances:
            self._free.put_nowait(inst)
        self._running: set[asyncio.Task[None]] = set()
        self._closing = False
        self._batch_seconds = 0.0  # moving average, for Retry-After
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"batcher-{label}")

    @property
    def depth(self) -> int:
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        return len(self._queue) + sum(len(getattr(t, "batch", ())) for t in self._running)

    def submit(self, prepared: Prepared, deadline: float | None) -> Pending:
        """Queue a request; raises QueueFull (with retry_after) when the queue is at its bound."""
        if self._closing:
            raise ModelNotReady(f"model '{self.label}' is shutting down; not accepting requests")
        if len(self._queue) >= self.policy.max_queue_size:
            raise QueueFull(
                f"model '{self.label}': queue is full ({self.policy.max_queue_size} requests "
                "waiting); retry later",
                retry_after=self.retry_after(),
            )
        p = Pending(prepared, asyncio.get_running_loop().create_future(), deadline)
        self._queue.append(p)
        self.observer.queue_depth(len(self._queue))
        self._wakeup.set()
        return p

    def retry_after(self) -> float:
        """Seconds until the queue has room, estimated from recent batch times (at least 1)."""
        per_batch = self._batch_seconds or 0.01
        rows = max(1, self.max_batch_size)
        waves = math.ceil(len(self._queue) / (rows * max(1, len(self.instances))))
        return max(1.0, math.ceil(waves * per_batch))

    async def close(self, timeout: float | None = None) -> None:
        """Stop accepting; run what is queued and in flight (up to ``timeout`` seconds)."""
        self._closing = True
        self._wakeup.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except asyncio.TimeoutError:
            self._task.cancel()
            for p in self._queue:
                if not p.future.done():
                    p.future.set_exception(ModelNotReady(f"model '{self.label}' shut down"))
        for inst in self.instances:
            await asyncio.get_running_loop().run_in_executor(None, inst.close)

    async def _loop(self) -> None:
        while True:
            inst = await self._free.get()
            batch = await self._collect()
            if batch is None:
                self._free.put_nowait(inst)
                if self._running:
                    await asyncio.gather(*self._running, return_exceptions=True)
                return
            task = asyncio.get_running_loop().create_task(self._execute(inst, batch))
            task.batch = batch  # type: ignore[attr-defined]
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    def _take_live(self) -> Pending | None:
        """The oldest request still worth running; expired ones get their 504 here."""
        now = time.monotonic()
        while self._queue:
            p = self._queue[0]
            if p.future.done():  # cancelled by the front (client went away, timed out)
                self._queue.pop(0)
                continue
            if p.deadline is not None and now >= p.deadline:
                self._queue.pop(0)
                p.future.set_exception(
                    DeadlineExceeded(
                        f"model '{self.label}': deadline passed after "
                        f"{(now - p.enqueued) * 1e3:.1f} ms in the queue"
                    )
                )
                continue
            return p
        return None

    async def _collect(self) -> list[Pending] | None:
        while True:
            first = self._take_live()
            if first is not None:
                break
            if self._closing:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        if self.max_batch_size == 0:
            self._queue.remove(first)
            return [first]
        window_end = first.enqueued + self.policy.max_queue_delay_us * 1e-6
        target = self.max_batch_size
        preferred = self.policy.preferred_batch_size
        while True:
            batch, rows = self._gather(first)
            if rows >= target or (preferred and rows >= preferred[-1]) or self._closing:
                break
            remaining = window_end - time.monotonic()
            if remaining <= 0:
                break
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except asyncio.TimeoutError:
                batch, rows = self._gather(first)
                break
        if preferred and rows not in preferred and rows > preferred[0]:
            # Prefer a preferred size; the rest goes into the next batch.
            fit = max(p for p in preferred if p <= rows)
            kept, n = [], 0
            for p in batch:
                if n + p.prepared.rows <= fit or not kept:
                    kept.append(p)
                    n += p.prepared.rows
            batch = kept
        for p in batch:
            self._queue.remove(p)
        self.observer.queue_depth(len(self._queue))
        return batch

    def _gather(self, first: Pending) -> tuple[list[Pending], int]:
        batch, rows = [first], first.prepared.rows
        for p in self._queue:
            if p is first or p.future.done() or p.prepared.key != first.prepared.key:
                continue
            if rows + p.prepared.rows > self.max_batch_size:
                continue
            batch.append(p)
            rows += p.prepared.rows
        return batch, rows

    async def _execute(self, inst: Instance, batch: list[Pending]) -> None:
        start = time.monotonic()
        rows = sum(p.prepared.rows for p in batch)
        for p in batch:
            p.started, p.batch_rows = start, rows
            self.observer.queue_seconds(start - p.enqueued)
        ran: float | None = None
        try:
            arrays = _concat(batch, self.max_batch_size > 0)
            outs, ran = await inst.run(arrays)
        except Exception as exc:  # noqa: BLE001 - every failure becomes the batch's answer
            err = _execution_error(self.label, exc)
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(err)
            return
        finally:
            elapsed = time.monotonic() - start
            self._batch_seconds = 0.8 * self._batch_seconds + 0.2 * elapsed
            self.observer.compute_seconds(elapsed if ran is None else ran)
            self.observer.batch_rows(rows)
            self._free.put_nowait(inst)
        end = time.monotonic()
        offset = 0
        for p in batch:
            n = p.prepared.rows
            mine = outs if len(batch) == 1 else [o[offset : offset + n] for o in outs]
            offset += n
            p.finished = end
            if not p.future.done():
                p.future.set_result(list(mine))


def _concat(batch: list[Pending], batched: bool) -> list[np.ndarray]:
    if len(batch) == 1:
        return list(batch[0].prepared.arrays)
    if not batched:  # pragma: no cover - unbatched models form batches of one
        raise ServeError("internal: several requests batched for an unbatched model")
    n = len(batch[0].prepared.arrays)
    return [np.concatenate([p.prepared.arrays[i] for p in batch], axis=0) for i in range(n)]


def _execution_error(label: str, exc: BaseException) -> ServeError:
    if isinstance(exc, ServeError):
        return exc
    if isinstance(exc, CuvilError):
        return ExecutionError(f"model '{label}' failed: {exc}")
    log.error("model %s raised %s", label, type(exc).__name__, exc_info=exc)
    return ExecutionError(f"model '{label}' failed: {type(exc).__name__}: {exc}")


def describe(p: Pending) -> dict[str, Any]:
    """Times of a finished request in milliseconds (for logs and spans)."""
    return {
        "queue_ms": round((p.started - p.enqueued) * 1e3, 3) if p.started else None,
        "compute_ms": round((p.finished - p.started) * 1e3, 3) if p.finished else None,
        "batch_size": p.batch_rows,
    }
