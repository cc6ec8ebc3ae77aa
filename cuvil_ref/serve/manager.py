"""The model manager: loaded versions, readiness, and the one inference path both protocols use.

``infer`` resolves the model and version (404 when unknown, 503 when not ready), validates the
request against the version's signature (400), queues it on the version's batcher (503 with
Retry-After when full), waits for the result under the request's deadline (504) and strips
bucket padding. It records the request metrics, the span and the access-log line, whatever the
outcome, so every request is counted exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_ref.serve.batcher import Batcher, BatchObserver, Pending
from cuvil_ref.serve.errors import (
    ConfigError,
    DeadlineExceeded,
    InvalidRequest,
    ModelNotFound,
    ModelNotReady,
    QueueFull,
    RequestCancelled,
    ServeError,
)
from cuvil_ref.serve.loader import LoadedVersion, load_version
from cuvil_ref.serve.metrics import ServerMetrics
from cuvil_ref.serve.repository import ModelEntry, scan_repository
from cuvil_ref.serve.telemetry import Telemetry, trace_id

log = logging.getLogger("cuvil.serve")

OUTCOMES = {
    InvalidRequest: "invalid",
    QueueFull: "queue_full",
    ModelNotFound: "not_found",
    DeadlineExceeded: "timeout",
    RequestCancelled: "cancelled",
}


@dataclass
class Served:
    """A ready version: what was loaded plus its batcher."""

    loaded: LoadedVersion
    batcher: Batcher

    @property
    def label(self) -> str:
        return self.loaded.label


@dataclass
class ModelState:
    entry: ModelEntry | None
    versions: dict[int, Served] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    error: str | None = None


@dataclass
class InferResult:
    served: Served
    outputs: dict[str, np.ndarray]
    request_id: str


class ModelManager:
    """Loads the repository and serves inference requests on it."""

    def __init__(self, repo: str | Path, metrics: ServerMetrics, telemetry: Telemetry) -> None:
        self.repo = Path(repo)
        self.metrics = metrics
        self.telemetry = telemetry
        self.models: dict[str, ModelState] = {}
        self.loaded = False
        self.draining = False
        self._inflight = 0
        self.metrics.scrape.sources.append(self._scrape)

    async def load_all(self, *, exit_on_error: bool = True) -> None:
        """Load every selected version (compiles off the event loop)."""
        loop = asyncio.get_running_loop()
        entries = await loop.run_in_executor(None, scan_repository, self.repo)
        for entry in entries:
            state = self.models.setdefault(entry.name, ModelState(entry))
            for v in entry.selected:
                try:
                    loaded = await loop.run_in_executor(None, load_version, entry, v)
                except ConfigError as exc:
                    self.metrics.loads.labels(entry.name, str(v), "failure").inc()
                    state.failed[v] = str(exc)
                    log.error("cannot load %s/%s: %s", entry.name, v, exc)
                    if exit_on_error:
                        raise
                    continue
                self.metrics.loads.labels(entry.name, str(v), "success").inc()
                self.metrics.ready.labels(entry.name, str(v)).set(1)
                state.versions[v] = Served(loaded, self._batcher(loaded))
        self.loaded = True

    def _batcher(self, loaded: LoadedVersion) -> Batcher:
        labels = (loaded.name, str(loaded.version))
        m = self.metrics
        observer = BatchObserver(
            queue_seconds=m.queue_seconds.labels(*labels).observe,
            compute_seconds=m.compute_seconds.labels(*labels).observe,
            batch_rows=m.batch_size.labels(*labels).observe,
            queue_depth=m.queue_depth.labels(*labels).set,
        )
        m.inflight.labels(*labels).set(0)
        return Batcher(
            loaded.label,
            loaded.instances,
            loaded.config.max_batch_size,
            loaded.config.dynamic_batching,
            observer,
        )

    @property
    def ready(self) -> bool:
        return self.loaded and not self.draining and all(s.versions for s in self.models.values())

    def resolve(self, name: str, version: str | None = None) -> Served:
        """The served version, or ModelNotFound / ModelNotReady naming what exists."""
        state = self.models.get(name)
        if state is None:
            known = ", ".join(sorted(self.models)) or "none"
            raise ModelNotFound(f"unknown model '{name}'; the repository serves: {known}")
        if version in (None, "", "-1"):
            if not state.versions:
                raise ModelNotReady(f"model '{name}' has no ready version: {state.failed}")
            return state.versions[max(state.versions)]
        try:
            v = int(version)
        except ValueError:
            raise ModelNotFound(f"model '{name}': version {version!r} is not a number") from None
        if v in state.versions:
            return state.versions[v]
        if v in state.failed:
            raise ModelNotReady(f"model '{name}' version {v} failed to load: {state.failed[v]}")
        on_disk = list(state.entry.versions) if state.entry else []
        raise ModelNotFound(
            f"model '{name}' has no version {v}; served versions: {sorted(state.versions)}"
            + (f" (on disk: {on_disk})" if on_disk else "")
        )

    async def infer(
        self,
        name: str,
        version: str | None,
        decode: Any,
        *,
        protocol: str,
        request_id: str = "",
        timeout_s: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> InferResult:
        """Run one request. ``decode(served)`` turns the wire request into named arrays."""
        start = time.monotonic()
        span = self.telemetry.start(name, headers)
        labels = (name, version or "")
        outcome, served, pending, err = "success", None, None, None
        self._inflight += 1
        try:
            if self.draining:
                raise ModelNotReady("the server is shutting down; not accepting requests")
            served = self.resolve(name, version)
            labels = (served.loaded.name, str(served.loaded.version))
            self.metrics.inflight.labels(*labels).inc()
            try:
                arrays = decode(served)
                prepared = served.loaded.signature.prepare(arrays)
                if timeout_s is None:
                    default = served.loaded.config.dynamic_batching.default_timeout_us
                    timeout_s = default * 1e-6 if default else None
                deadline = start + timeout_s if timeout_s else None
                pending = served.batcher.submit(prepared, deadline)
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    outs = await asyncio.wait_for(asyncio.shield(pending.future), remaining)
                except asyncio.TimeoutError:
                    pending.future.cancel()
                    raise DeadlineExceeded(
                        f"model '{served.label}': no result within the request's timeout of "
                        f"{timeout_s * 1e3:.0f} ms"
                    ) from None
                except asyncio.CancelledError:
                    pending.future.cancel()
                    raise
            finally:
                self.metrics.inflight.labels(*labels).dec()
            result = self._name_outputs(served, outs, prepared.strip)
            return InferResult(served, result, request_id)
        except ServeError as exc:
            outcome = _outcome(exc)
            err = str(exc)
            raise
        except asyncio.CancelledError:
            outcome, err = "cancelled", "client went away"
            raise
        finally:
            self._inflight -= 1
            elapsed = time.monotonic() - start
            self.metrics.requests.labels(*labels, protocol, outcome).inc()
            times = _times(pending)
            self.telemetry.children(span, times)
            span.set_attribute("cuvil.outcome", outcome)
            span.end()
            record = {
                "ts": round(time.time(), 6),
                "trace_id": trace_id(span),
                "request_id": request_id,
                "protocol": protocol,
                "model": labels[0],
                "version": labels[1],
                "outcome": outcome,
                "latency_ms": round(elapsed * 1e3, 3),
                **_durations(times),
            }
            if err:
                record["error"] = err
            self.telemetry.log(record)

    def record_latency(self, result: InferResult, arrival: float) -> None:
        """Observe a successful request's latency, arrival to encoded response (the fronts call
        this once the response is built, so the histogram matches what a client measures)."""
        loaded = result.served.loaded
        self.metrics.request_seconds.labels(loaded.name, str(loaded.version)).observe(
            time.monotonic() - arrival
        )

    def _name_outputs(
        self, served: Served, outs: list[np.ndarray], strip: Mapping[str, tuple[int, int]]
    ) -> dict[str, np.ndarray]:
        result = {}
        for sig, arr in zip(served.loaded.signature.outputs, outs):
            if sig.name in strip:
                dim, n = strip[sig.name]
                arr = arr[(slice(None),) * dim + (slice(0, n),)]
            result[sig.name] = arr
        return result

    async def drain(self, timeout: float) -> None:
        """Stop accepting; finish queued and running requests (at most ``timeout`` seconds)."""
        self.draining = True
        end = time.monotonic() + timeout
        batchers = [s.batcher for m in self.models.values() for s in m.versions.values()]
        await asyncio.gather(
            *(b.close(max(0.1, end - time.monotonic())) for b in batchers), return_exceptions=True
        )
        for m in self.models.values():
            for v in m.versions:
                self.metrics.ready.labels(m.entry.name if m.entry else "", str(v)).set(0)

    def _scrape(self) -> list[tuple[str, Any, float]]:
        rows: list[tuple[str, Any, float]] = []
        for state in list(self.models.values()):
            for v, served in list(state.versions.items()):
                for i, inst in enumerate(served.loaded.instances):
                    rows.append(("busy", [served.loaded.name, str(v), str(i)], inst.busy_seconds))
                    mac = inst.device_metrics().get("mac_utilization")
                    if isinstance(mac, (int, float)) and inst.batches:
                        rows.append(
                            ("mac", [f"{served.loaded.target}:{inst.label}", "npu_mac"], float(mac))
                        )
        return rows


def _outcome(exc: ServeError) -> str:
    for cls, name in OUTCOMES.items():
        if isinstance(exc, cls):
            return name
    if exc.http_status == 503:
        return "unavailable"
    return "error"


def _times(p: Pending | None) -> dict[str, Any]:
    if p is None:
        return {}
    return {
        "enqueued": p.enqueued,
        "started": p.started,
        "finished": p.finished,
        "batch_rows": p.batch_rows,
    }


def _durations(times: Mapping[str, Any]) -> dict[str, Any]:
    if not times.get("started"):
        return {}
    out = {"queue_ms": round((times["started"] - times["enqueued"]) * 1e3, 3)}
    if times.get("finished"):
        out["compute_ms"] = round((times["finished"] - times["started"]) * 1e3, 3)
        out["batch_size"] = times["batch_rows"]
    return out
