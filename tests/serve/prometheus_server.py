"""A real Prometheus server (Debian's ``prometheus`` package) on loopback, for the tests.

It scrapes the given targets every second into a temporary TSDB; ``query`` evaluates PromQL
through the HTTP API (``/api/v1/query``).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, workdir: Path, targets: list[str]) -> None:
        self.binary = shutil.which("prometheus")
        self.workdir = workdir
        self.targets = targets
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Prometheus:
        assert self.binary
        cfg = self.workdir / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: cuvil\n    static_configs:\n"
            f"      - targets: {json.dumps(self.targets)}\n"
        )
        log = open(self.workdir / "prometheus.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                if urllib.request.urlopen(f"{self.url}/-/ready", timeout=1).status == 200:
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError((self.workdir / "prometheus.log").read_text())

    def api(self, path: str, **params: Any) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Evaluate ``expr`` now, or at the Unix time ``at``."""
        params = {"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"}
        return self.api("query", **params)["result"]

    def last_scrape(self, metric: str) -> float:
        """The Unix time of the newest sample of ``metric`` (its last scrape)."""
        rows = self.query(f"timestamp({metric})")
        if not rows:
            raise AssertionError(f"Prometheus holds no sample of {metric}")
        return max(float(r["value"][1]) for r in rows)

    def wait_scraped(self, metric: str, timeout: float = 30) -> None:
        """Wait until a scrape that happened after now has landed."""
        start = time.time()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            rows = self.query(f"timestamp({metric})")
            if rows and min(float(r["value"][1]) for r in rows) > start + 0.5:
                return
            time.sleep(0.3)
        raise AssertionError(f"Prometheus did not scrape {metric} in {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
