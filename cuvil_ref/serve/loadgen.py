"""Drive ``cuvil serve`` with locust (headless, bounded in users and time) and read the results.

``run_locust`` starts locust in its own process (it monkey-patches the standard library with
gevent, so it must not share an interpreter with anything else) and returns the aggregated row
of its CSV statistics: request and failure counts, requests per second and percentiles in ms.
``run_wrk`` does the same with Debian's ``wrk`` (C, a small share of a core), which the
benchmark's soak prefers when it is installed. Used by the CI load test and
``benchmarks/serve/bench_serve.py``.
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
        "generator": "locust",
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


_WRK_SCRIPT = """
local f = io.open("{body}", "rb"); local body = f:read("*a"); f:close()
wrk.method = "POST"; wrk.body = body
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "{header_len}"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("CUVIL %d %d %d %f %f %f\\n", summary.requests,
    e.connect + e.read + e.write + e.timeout + e.status, summary.duration,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.mean / 1000))
end
"""


def run_wrk(
    host: str,
    *,
    connections: int,
    seconds: float,
    out_dir: str | Path,
    model: str = "mlp",
    input_name: str = "INPUT0",
    shape: tuple[int, ...] = (1, 784),
) -> dict[str, Any]:
    """``connections`` closed-loop connections from wrk (Debian's ``wrk``, one thread), each
    posting the same binary-extension request; the same statistics as :func:`run_locust`.

    wrk is C: it needs a small share of a core where locust needs most of one, so on a 2-core
    machine its latencies are the server's, not the load generator's wait for a core."""
    import json

    import numpy as np

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": input_name,
                    "shape": list(shape),
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": x.nbytes},
                }
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    body = out / f"wrk-{model}.bin"
    body.write_bytes(header + x.tobytes())
    script = out / f"wrk-{model}.lua"
    script.write_text(_WRK_SCRIPT.format(body=body, header_len=len(header)))
    cmd = [
        "wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s", "--timeout", "10s",
        "-s", str(script), f"http://{host}/v2/models/{model}/infer",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("CUVIL ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no statistics (exit {proc.returncode}):\n{proc.stderr}")
    n, failed, duration_us, p50, p99, mean = line.split()[1:]
    return {
        "generator": "wrk",
        "users": connections,
        "seconds": seconds,
        "rate_per_user": 0.0,
        "requests": int(n),
        "failures": int(failed),
        "rps": int(n) / (float(duration_us) / 1e6),
        "p50_ms": float(p50),
        "p99_ms": float(p99),
        "avg_ms": float(mean),
        "exit_code": proc.returncode,
    }
