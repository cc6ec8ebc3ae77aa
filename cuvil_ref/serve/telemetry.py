"""OpenTelemetry spans per request and the structured JSON access log.

Every inference request gets a span ``infer <model>`` (continuing a W3C ``traceparent`` the
client sent) with three children recorded from the batcher's timestamps: ``queue`` (waiting),
``batch`` (the batch it joined: size, instance) and ``execute`` (the compiled program's run).
The access log writes one JSON object per request with the trace id, so a slow line in the log
leads to its trace. Spans are exported over OTLP only when an endpoint is configured
(``--otlp-endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``); by default nothing leaves the process.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

ACCESS_LOGGER = "cuvil.serve.access"


class Telemetry:
    """A tracer provider of its own (not the global one) and the access logger."""

    def __init__(
        self,
        *,
        otlp_endpoint: str | None = None,
        access_log: str | None = "-",
        exporter: SpanExporter | None = None,
    ) -> None:
        from cuvil_ref import __version__

        self.provider = TracerProvider(
            resource=Resource.create(
                {"service.name": "cuvil-serve", "service.version": __version__}
            )
        )
        endpoint = otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if exporter is None and endpoint:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=endpoint, insecure=endpoint.startswith("http:"))
        self.exporting = exporter is not None
        if exporter is not None:
            self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("cuvil.serve")
        self.access = logging.getLogger(ACCESS_LOGGER)
        self.access.propagate = False
        self.access.setLevel(logging.INFO)
        if access_log and not self.access.handlers:
            handler: logging.Handler = (
                logging.StreamHandler(sys.stderr)
                if access_log == "-"
                else logging.FileHandler(access_log, encoding="utf-8")
            )
            handler.setFormatter(logging.Formatter("%(message)s"))
            self.access.addHandler(handler)
        self._owned = bool(access_log) and self.access.handlers

    def start(self, model: str, headers: Mapping[str, str] | None) -> trace.Span:
        ctx = propagate.extract(dict(headers or {}))
        return self.tracer.start_span(f"infer {model}", context=ctx, kind=trace.SpanKind.SERVER)

    def children(self, span: trace.Span, times: Mapping[str, Any]) -> None:
        """Record queue/batch/execute children from monotonic timestamps of the batcher."""
        if not times.get("started"):
            return
        ctx = trace.set_span_in_context(span)
        offset = time.time_ns() - time.monotonic_ns()

        def ns(t: float) -> int:
            return int(t * 1e9) + offset

        q = self.tracer.start_span("queue", context=ctx, start_time=ns(times["enqueued"]))
        q.end(end_time=ns(times["started"]))
        if times.get("finished"):
            b = self.tracer.start_span(
                "batch",
                context=ctx,
                start_time=ns(times["started"]),
                attributes={"cuvil.batch_size": times.get("batch_rows", 0)},
            )
            e = self.tracer.start_span(
                "execute",
                context=trace.set_span_in_context(b),
                start_time=ns(times["started"]),
            )
            e.end(end_time=ns(times["finished"]))
            b.end(end_time=ns(times["finished"]))

    def log(self, record: dict[str, Any]) -> None:
        if self.access.handlers:
            self.access.info(json.dumps(record, separators=(",", ":"), default=str))

    def shutdown(self) -> None:
        self.provider.shutdown()
        if self._owned:
            for h in list(self.access.handlers):
                h.flush()


def trace_id(span: trace.Span) -> str:
    return format(span.get_span_context().trace_id, "032x")
