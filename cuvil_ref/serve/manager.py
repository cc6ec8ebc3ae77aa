"""The model manager: loaded versions, readiness, and the one inference path both protocols use.

``infer`` resolves the model and version (404 when unknown, 503 when not ready), validates the
request against the version's signature (400), queues it on the version's batcher (503 with
Retry-After when full), waits for the result under the request's deadline (504) and strips
bucket padding. It records the request metrics, the span and the access-log line, whatever the
outcome, so every request is counted exactly once.

A request that names no version goes to the model's stable version, or -- while a rollout is in
progress (``rollout/``) -- to the new version for its share of the traffic, split exactly
(smooth weighted round-robin: at 10% every tenth request). A request the new version fails with
a server-side error is counted against it and, when the policy says so, run again on the
stable version, so a bad canary costs the clients nothing.
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
    ExecutionError,
    InvalidRequest,
    ModelNotFound,
    ModelNotReady,
    QueueFull,
    RequestCancelled,
    ServeError,
)
from cuvil_ref.serve.loader import LoadedVersion, load_version, name_outputs
from cuvil_ref.serve.metrics import ServerMetrics
from cuvil_ref.serve.repository import ModelEntry, scan_repository
from cuvil_ref.serve.rollout.state import ModelRollout
from cuvil_ref.serve.telemetry import Telemetry, trace_id
from cuvil_ref.serve.verify import VersionRejected

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
    rollout: ModelRollout | None = None
    split: int = 0  # the smooth weighted round-robin's accumulator (percent units)

    @property
    def stable(self) -> Served | None:
        r = self.rollout
        if r is not None and r.stable in self.versions:
            return self.versions[r.stable]
        return self.versions[max(self.versions)] if self.versions else None


@dataclass
class InferResult:
    served: Served
    outputs: dict[str, np.ndarray]
    request_id: str


class ModelManager:
    """Loads the repository and serves inference requests on it."""

    def __init__(
        self,
        repo: str | Path,
        metrics: ServerMetrics,
        telemetry: Telemetry,
        *,
        trusted_keys: list[Any] | None = None,
    ) -> None:
        self.repo = Path(repo)
        self.metrics = metrics
        self.telemetry = telemetry
        self.trusted_keys = trusted_keys or None
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
            await self.add_model(entry, exit_on_error=exit_on_error)
        self.loaded = True

    async def add_model(self, entry: ModelEntry, *, exit_on_error: bool = False) -> ModelState:
        """Load the versions ``entry``'s policy selects; the newest is the stable version."""
        state = self.models.setdefault(entry.name, ModelState(entry))
        state.rollout = ModelRollout(entry.name, entry.config.rollout)
        for v in entry.selected:
            try:
                served = await self.load(entry, v)
            except ConfigError as exc:
                state.failed[v] = str(exc)
                state.rollout.refused[v] = str(exc)
                if exit_on_error:
                    raise
                continue
            state.versions[v] = served
        if state.versions:
            state.rollout.stable = max(state.versions)
        return state

    async def load(self, entry: ModelEntry, version: int) -> Served:
        """Verify, compile and warm up one version (off the event loop); counts the outcome."""
        loop = asyncio.get_running_loop()
        policy = entry.config.rollout
        try:
            loaded = await loop.run_in_executor(
                None,
                lambda: load_version(
                    entry,
                    version,
                    trusted_keys=self.trusted_keys,
                    require_golden=policy.require_golden,
                ),
            )
        except ConfigError as exc:
            reason = exc.reason if isinstance(exc, VersionRejected) else "config"
            self.metrics.loads.labels(entry.name, str(version), "failure").inc()
            self.metrics.rejections.labels(entry.name, str(version), reason).inc()
            log.error("cannot load %s/%s (%s): %s", entry.name, version, reason, exc)
            raise
        self.metrics.loads.labels(entry.name, str(version), "success").inc()
        self.metrics.ready.labels(entry.name, str(version)).set(1)
        return Served(loaded, self._batcher(loaded))

    async def unload(self, name: str, version: int, timeout: float = 30.0) -> None:
        """Stop routing to ``version``, then wait for its queued and running requests."""
        state = self.models[name]
        served = state.versions.pop(version, None)
        if served is None:
            return
        self.metrics.ready.labels(name, str(version)).set(0)
        await served.batcher.close(timeout)
        log.info("unloaded %s (in-flight requests finished)", served.label)

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
            stable = state.stable
            if stable is None:
                raise ModelNotReady(f"model '{name}' has no ready version: {state.failed}")
            return stable
        try:
            v = int(version)
        except ValueError:
            raise ModelNotFound(f"model '{name}': version {version!r} is not a number") from None
        if v in state.versions:
            return state.versions[v]
        if v in state.failed:
            raise ModelNotReady(f"model '{name}' version {v} failed to load: {state.failed[v]}")
        refused = state.rollout.refused if state.rollout else {}
        if v in refused:
            raise ModelNotReady(f"model '{name}' version {v} does not serve: {refused[v]}")
        on_disk = list(state.entry.versions) if state.entry else []
        raise ModelNotFound(
            f"model '{name}' has no version {v}; served versions: {sorted(state.versions)}"
            + (f" (on disk: {on_disk})" if on_disk else "")
        )

    def route(self, name: str, version: str | None) -> tuple[Served, Served | None]:
        """The version a request goes to, and the stable one to retry on when that is a canary
        that may fail over (None otherwise)."""
        served = self.resolve(name, version)
        if version not in (None, "", "-1"):
            return served, None
        state = self.models[name]
        r = state.rollout
        c = r.candidate if r is not None else None
        percent = r.percent if r is not None else 0
        if c is None or not percent or c.version not in state.versions:
            return served, None
        state.split += percent
        if state.split < 100:
            return served, None
        state.split -= 100
        retry = served if r is not None and r.policy.retry_canary_failures else None
        return state.versions[c.version], retry

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
            served, fallback = self.route(name, version)
            while True:
                labels = (served.loaded.name, str(served.loaded.version))
                if timeout_s is None:
                    default = served.loaded.config.dynamic_batching.default_timeout_us
                    timeout_s = default * 1e-6 if default else None
                try:
                    outs, prepared, pending = await self._attempt(
                        served, decode, start, timeout_s, labels
                    )
                except (ExecutionError, DeadlineExceeded) as exc:
                    self._count_candidate(served, ok=False)
                    if fallback is None or isinstance(exc, DeadlineExceeded):
                        raise
                    log.warning(
                        "%s failed a request; retried on %s: %s", served.label, fallback.label, exc
                    )
                    self.metrics.canary_retries.labels(*labels).inc()
                    served, fallback = fallback, None
                    continue
                self._count_candidate(served, ok=True)
                result = name_outputs(served.loaded, outs, prepared.strip)
                return InferResult(served, result, request_id)
        except ServeError as exc:
            outcome = outcome_of(exc)
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

    async def _attempt(
        self,
        served: Served,
        decode: Any,
        start: float,
        timeout_s: float | None,
        labels: tuple[str, str],
    ) -> tuple[list[np.ndarray], Any, Pending]:
        self.metrics.inflight.labels(*labels).inc()
        try:
            arrays = decode(served)
            prepared = served.loaded.signature.prepare(arrays)
            deadline = start + timeout_s if timeout_s else None
            pending = served.batcher.submit(prepared, deadline)
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                outs = await asyncio.wait_for(asyncio.shield(pending.future), remaining)
            except asyncio.TimeoutError:
                pending.future.cancel()
                raise DeadlineExceeded(
                    f"model '{served.label}': no result within the request's timeout of "
                    f"{(timeout_s or 0) * 1e3:.0f} ms"
                ) from None
            except asyncio.CancelledError:
                pending.future.cancel()
                raise
            return outs, prepared, pending
        finally:
            self.metrics.inflight.labels(*labels).dec()

    def _count_candidate(self, served: Served, *, ok: bool) -> None:
        state = self.models.get(served.loaded.name)
        if state is not None and state.rollout is not None:
            state.rollout.record(served.loaded.version, ok)

    async def run_golden(self, served: Served, timeout: float) -> tuple[bool, str]:
        """A health probe: the version's golden request (zeros of the warm-up shape without
        one) through its batcher, within ``timeout`` seconds. (passed, what happened)"""
        from cuvil_ref.serve.golden import GoldenMismatch
        from cuvil_ref.serve.loader import warmup_inputs

        loaded = served.loaded
        golden = loaded.golden
        named = dict(golden.inputs) if golden is not None else warmup_inputs(loaded)
        started = time.monotonic()
        try:
            prepared = loaded.signature.prepare(named)
            pending = served.batcher.submit(prepared, started + timeout)
            outs = await asyncio.wait_for(asyncio.shield(pending.future), timeout)
            got = name_outputs(loaded, outs, prepared.strip)
            if golden is not None:
                golden.check(got, loaded.label)
        except asyncio.TimeoutError:
            return False, f"no answer within the probe timeout of {timeout:g} s"
        except (ServeError, GoldenMismatch) as exc:
            return False, str(exc)
        return True, f"passed in {(time.monotonic() - started) * 1e3:.1f} ms"

    def record_latency(self, result: InferResult, arrival: float) -> None:
        """Observe a successful request's latency, arrival to encoded response (the fronts call
        this once the response is built, so the histogram matches what a client measures)."""
        loaded = result.served.loaded
        self.metrics.request_seconds.labels(loaded.name, str(loaded.version)).observe(
            time.monotonic() - arrival
        )

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


def outcome_of(exc: ServeError) -> str:
    """The ``outcome`` label of a request that failed with ``exc``."""
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
