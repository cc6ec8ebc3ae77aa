"""The soak's server-side view, from a real Prometheus, over exactly the soak's window.

The server runs a closed-loop sweep before the soak, so its counters hold more than the soak.
Prometheus scrapes the idle server once before the soak (``t0``) and once after it (``t1``);
every figure here is the difference of the two scrapes, so it covers the soak and nothing else:

- requests by ``outcome``; a closed-loop generator that stops on a timer (wrk, locust) closes
  its connections with requests still in flight, and the server counts those as ``cancelled``
  (the client went away). They number at most one per connection, and the generator does not
  count them as sent; anything else that is not ``success`` is a failure;
- the P99 of ``cuvil_request_duration_seconds`` from the window's bucket increments, compared
  with the client's P99 in histogram buckets.
"""

from __future__ import annotations

import bisect
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REQUESTS = "cuvil_requests_total"
BUCKETS = "cuvil_request_duration_seconds_bucket"


def windowed(metric: str, span_ms: int) -> str:
    """Per-series increase of a counter over the last ``span_ms``: a series that did not exist
    at the window's start counts in full."""
    return f"(({metric} - {metric} offset {span_ms}ms) or {metric})"


def soak_with_prometheus(
    server: Any, work: Path, run: Callable[[], dict[str, Any]]
) -> dict[str, Any] | None:
    """Run ``run()`` (returns the client's statistics) under a real Prometheus scraping
    ``server``; None when Debian's ``prometheus`` is not installed."""
    if shutil.which("prometheus") is None:
        return None
    from cuvil_ref.serve.metrics import LATENCY_BUCKETS
    from tests.serve.prometheus_server import Prometheus

    prom = Prometheus(work, [server.metrics]).start()
    try:
        time.sleep(1.0)  # requests the sweep left in flight finish before the first scrape
        prom.wait_scraped(REQUESTS)
        t0 = prom.last_scrape(REQUESTS)
        stats = run()
        prom.wait_scraped(REQUESTS)
        t1 = prom.last_scrape(REQUESTS)
        span = round((t1 - t0) * 1e3)
        by_outcome = {
            r["metric"].get("outcome", ""): float(r["value"][1])
            for r in prom.query(f"sum by (outcome) ({windowed(REQUESTS, span)})", at=t1)
        }
        rows = prom.query(
            f"histogram_quantile(0.99, sum by (le) ({windowed(BUCKETS, span)}))", at=t1
        )
    finally:
        prom.stop()
    server_p99 = float(rows[0]["value"][1])
    client_p99 = stats["p99_ms"] / 1e3
    cancelled = by_outcome.get("cancelled", 0.0)
    failed = sum(v for k, v in by_outcome.items() if k not in ("success", "cancelled"))
    return {
        **stats,
        "prometheus_window_s": round(span / 1e3, 3),
        "prometheus_p99_ms": round(server_p99 * 1e3, 3),
        "server_outcomes": by_outcome,
        "server_success": by_outcome.get("success", 0.0),
        "server_failed": failed,
        "server_cancelled_at_stop": cancelled,
        "cancelled_within_connections": cancelled <= stats["users"],
        "bucket_distance": abs(
            bisect.bisect_left(LATENCY_BUCKETS, server_p99)
            - bisect.bisect_left(LATENCY_BUCKETS, client_p99)
        ),
    }
