"""Prometheus metrics of the server (``prometheus_client``), one registry per server.

Latencies are histograms, so P50/P99 come from ``histogram_quantile`` over their buckets; the
buckets are fine enough (0.5 ms steps at the low end) that the server's P99 and a client's agree
within one bucket. Values read at scrape time (compile-cache counters, device utilization,
instance busy time) come from a custom collector. ``METRICS`` lists every family with its help
text; ``docs/serving.md`` and the Grafana dashboard use exactly these names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0065, 0.008, 0.01, 0.0125, 0.015,
    0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5,
    0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0,
)  # fmt: skip
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)

METRICS: dict[str, str] = {
    "cuvil_requests_total": "Inference requests by model, version, protocol and outcome",
    "cuvil_request_duration_seconds": "Server-side request latency, arrival to response",
    "cuvil_queue_duration_seconds": "Time a request waited in the batcher's queue",
    "cuvil_compute_duration_seconds": "Time one batch ran on an instance's thread",
    "cuvil_batch_size": "Rows per executed batch",
    "cuvil_queue_depth": "Requests waiting in the batcher's queue",
    "cuvil_inflight_requests": "Requests received and not yet answered",
    "cuvil_model_loads_total": "Model version loads by outcome",
    "cuvil_model_ready": "1 when the model version is ready to serve",
    "cuvil_compile_cache_hits_total": "Compile-cache hits in this server process",
    "cuvil_compile_cache_misses_total": "Compile-cache misses in this server process",
    "cuvil_instance_busy_seconds_total": "Seconds an instance spent executing batches",
    "cuvil_device_utilization": "Device utilization 0..1 (npu MAC utilization, GPU via NVML, "
    "CPU: this process's CPU time per core)",
    "cuvil_version_rejections_total": "Model versions refused before serving, by reason",
    "cuvil_rollout_transitions_total": "Rollout state changes by model, version and new state",
    "cuvil_rollout_traffic_percent": "Share of a model's traffic routed to a version (percent)",
    "cuvil_health_probes_total": "Health probes (golden requests) by model, version, outcome",
    "cuvil_canary_retries_total": "Requests a new version failed that were re-run on the stable",
    "cuvil_artifact_changes_total": "Loaded artifacts found changed on disk, by verdict",
}

#: Counters with a series only once their event happened (a refused version, a canary request
#: re-run, an artifact changed on disk): exported by a server that saw one (tests/serve/rollout).
EVENT_METRICS = {
    "cuvil_version_rejections_total",
    "cuvil_canary_retries_total",
    "cuvil_artifact_changes_total",
}


class ServerMetrics:
    """The metric objects the server updates, in their own registry."""

    def __init__(self) -> None:
        disable_created_metrics()  # the *_created series only double what Prometheus scrapes
        r = self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        mv = ("model", "version")

        def name(n: str) -> str:  # prometheus_client adds _total to counters itself
            return n.removesuffix("_total")

        self.requests = Counter(
            name("cuvil_requests_total"),
            METRICS["cuvil_requests_total"],
            (*mv, "protocol", "outcome"),
            registry=r,
        )
        self.request_seconds = Histogram(
            "cuvil_request_duration_seconds",
            METRICS["cuvil_request_duration_seconds"],
            mv,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_seconds = Histogram(
            "cuvil_queue_duration_seconds",
            METRICS["cuvil_queue_duration_seconds"],
            mv,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.compute_seconds = Histogram(
            "cuvil_compute_duration_seconds",
            METRICS["cuvil_compute_duration_seconds"],
            mv,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "cuvil_batch_size", METRICS["cuvil_batch_size"], mv, buckets=BATCH_BUCKETS, registry=r
        )
        self.queue_depth = Gauge("cuvil_queue_depth", METRICS["cuvil_queue_depth"], mv, registry=r)
        self.inflight = Gauge(
            "cuvil_inflight_requests", METRICS["cuvil_inflight_requests"], mv, registry=r
        )
        self.loads = Counter(
            name("cuvil_model_loads_total"),
            METRICS["cuvil_model_loads_total"],
            (*mv, "outcome"),
            registry=r,
        )
        self.ready = Gauge("cuvil_model_ready", METRICS["cuvil_model_ready"], mv, registry=r)
        self.rejections = Counter(
            name("cuvil_version_rejections_total"),
            METRICS["cuvil_version_rejections_total"],
            (*mv, "reason"),
            registry=r,
        )
        self.transitions = Counter(
            name("cuvil_rollout_transitions_total"),
            METRICS["cuvil_rollout_transitions_total"],
            (*mv, "state"),
            registry=r,
        )
        traffic = "cuvil_rollout_traffic_percent"
        self.traffic = Gauge(traffic, METRICS[traffic], mv, registry=r)
        self.probes = Counter(
            name("cuvil_health_probes_total"),
            METRICS["cuvil_health_probes_total"],
            (*mv, "outcome"),
            registry=r,
        )
        self.canary_retries = Counter(
            name("cuvil_canary_retries_total"),
            METRICS["cuvil_canary_retries_total"],
            mv,
            registry=r,
        )
        self.artifact_changes = Counter(
            name("cuvil_artifact_changes_total"),
            METRICS["cuvil_artifact_changes_total"],
            (*mv, "verdict"),
            registry=r,
        )
        self.scrape = ScrapeCollector()
        r.register(self.scrape)


class ScrapeCollector(Collector):
    """Values read when Prometheus scrapes: cache counters, busy time, device utilization."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], Iterable[tuple[str, str, Any]]]] = []
        self._cpu_last = (time.monotonic(), _cpu_seconds())

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        from cuvil_ref.cache import STATS

        hits = CounterMetricFamily(
            "cuvil_compile_cache_hits", METRICS["cuvil_compile_cache_hits_total"]
        )
        hits.add_metric([], STATS.hits)
        misses = CounterMetricFamily(
            "cuvil_compile_cache_misses", METRICS["cuvil_compile_cache_misses_total"]
        )
        misses.add_metric([], STATS.misses)
        busy = CounterMetricFamily(
            "cuvil_instance_busy_seconds",
            METRICS["cuvil_instance_busy_seconds_total"],
            labels=("model", "version", "instance"),
        )
        util = GaugeMetricFamily(
            "cuvil_device_utilization",
            METRICS["cuvil_device_utilization"],
            labels=("device", "kind"),
        )
        util.add_metric(["cpu", "cpu_process"], self._cpu_utilization())
        for gpu, value in _nvml_utilization():
            util.add_metric([gpu, "gpu_nvml"], value)
        for source in self.sources:
            for kind, labels, value in source():
                if kind == "busy":
                    busy.add_metric(labels, value)
                elif kind == "mac":
                    util.add_metric(labels, value)
        yield from (hits, misses, busy, util)

    def _cpu_utilization(self) -> float:
        now, cpu = time.monotonic(), _cpu_seconds()
        then, cpu_then = self._cpu_last
        self._cpu_last = (now, cpu)
        if now - then <= 0:
            return 0.0
        return min(1.0, (cpu - cpu_then) / ((now - then) * (os.cpu_count() or 1)))


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


_NVML: list[Any] = []


def _nvml_utilization() -> list[tuple[str, float]]:
    """GPU utilization through NVML where a driver is present (nothing otherwise)."""
    if _NVML == [None]:
        return []
    try:
        if not _NVML:
            import pynvml

            pynvml.nvmlInit()
            _NVML.append(pynvml)
        nv = _NVML[0]
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            rate = nv.nvmlDeviceGetUtilizationRates(nv.nvmlDeviceGetHandleByIndex(i))
            out.append((f"gpu{i}", rate.gpu / 100.0))
        return out
    except Exception:  # no pynvml, no driver, no GPU: no GPU metric
        _NVML[:] = [None]
        return []
