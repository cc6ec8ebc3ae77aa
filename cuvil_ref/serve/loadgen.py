"""Drive ``cuvil serve`` with locust (headless, bounded in users and time) and read the results.

``run_locust`` starts locust in its own process (it monkey-patches the standard library with
gevent, so it must not share an interpreter with anything else) and returns the aggregated row
of its CSV statistics: request and failure counts, requests per second and percentiles in ms.
Used by the CI load test and ``benchmarks/serve/bench_serve.py``.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

LOCUSTFILE = Path(__file__).with_name("locustfile.py")


def run_locust(
    host: str,
    *,
    users: int,
    seconds: float,
    out_dir: str | Path,
    model: str = "mlp",
    input_name: str = "INPUT0",
    shape: tuple[int, ...] = (1, 784),
    binary: bool = True,
    locustfile: str | Path = LOCUSTFILE,
    rate: float = 0.0,
) -> dict[str, Any]:
    """Run ``users`` users for ``seconds``; the aggregated statistics. Closed loop, or with
    ``rate`` > 0 each user paced at ``rate`` requests per second."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prefix = out / f"locust-{model}-u{users}"
    env = {
        **os.environ,
        "CUVIL_LOAD_MODEL": model,
        "CUVIL_LOAD_INPUT": input_name,
        "CUVIL_LOAD_SHAPE": ",".join(map(str, shape)),
        "CUVIL_LOAD_BINARY": "1" if binary else "0",
        "CUVIL_LOAD_RATE": str(rate),
    }
    cmd = [
        sys.executable, "-m", "locust", "-f", str(locustfile), "--headless",
        "-u", str(users), "-r", str(users), "-t", f"{int(seconds)}s",
        "--host", f"http://{host}", "--csv", str(prefix), "--only-summary",
        "--stop-timeout", "5", "--loglevel", "WARNING",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120)
    stats = Path(f"{prefix}_stats.csv")
    if not stats.exists():
        raise RuntimeError(f"locust wrote no statistics (exit {proc.returncode}):\n{proc.stderr}")
    with stats.open(newline="") as f:
        rows = {r["Name"]: r for r in csv.DictReader(f)}
    agg = rows["Aggregated"]
    return {
        "users": users,
        "seconds": seconds,
        "rate_per_user": rate,
        "requests": int(agg["Request Count"]),
        "failures": int(agg["Failure Count"]),
        "rps": float(agg["Requests/s"]),
        "p50_ms": float(agg["50%"]),
        "p99_ms": float(agg["99%"]),
        "avg_ms": float(agg["Average Response Time"]),
        "exit_code": proc.returncode,
    }
