"""Run ``cuvil serve`` as a child process and wait until it is ready (tests, benchmarks).

The server runs in its own process, as it does in production: the client libraries that talk to
it (tritonclient, locust) stay out of its interpreter, and a crash or a hang cannot take the
caller with it. Ports default to 0 (any free port); ``ports`` holds the bound ones, parsed from
the server's ready line.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_READY = re.compile(r"ready; HTTP [^:]+:(\d+), gRPC [^:]+:(\d+), metrics [^:]+:(\d+)")


class ServerProcess:
    """``with ServerProcess(repo) as s: s.http_url ...``; stops with SIGTERM (graceful drain)."""

    def __init__(
        self,
        repo: str | Path,
        *args: str,
        log_dir: str | Path | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = 120.0,
        module: str = "cuvil_ref.cli",
    ) -> None:
        self.repo = Path(repo)
        self.args = list(args)
        self.log_dir = Path(log_dir) if log_dir else self.repo.parent
        self.env = env
        self.startup_timeout = startup_timeout
        self.module = module  # the program run with ``python -m`` (``cuvil`` by default)
        self.proc: subprocess.Popen[str] | None = None
        self.ports: dict[str, int] = {}
        self.access_log = self.log_dir / f"access-{os.getpid()}-{id(self)}.jsonl"
        self.stderr_path = self.log_dir / f"server-{os.getpid()}-{id(self)}.log"

    @property
    def http(self) -> str:
        return f"127.0.0.1:{self.ports['http']}"

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def metrics(self) -> str:
        return f"127.0.0.1:{self.ports['metrics']}"

    def start(self) -> ServerProcess:
        cmd = [
            sys.executable,
            "-m",
            self.module,
            "serve",
            str(self.repo),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
            "--access-log",
            str(self.access_log),
            *self.args,
        ]
        env = {**os.environ, **(self.env or {}), "PYTHONUNBUFFERED": "1"}
        self._stderr = open(self.stderr_path, "w", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env
        )
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + self.startup_timeout
        while time.monotonic() < end:
            if not sel.select(timeout=0.2):
                if self.proc.poll() is not None:
                    break
                continue
            line = self.proc.stdout.readline()
            if not line:
                break
            m = _READY.search(line)
            if m:
                self.ports = dict(zip(("http", "grpc", "metrics"), map(int, m.groups())))
                return self
        self.stop()
        raise RuntimeError(f"cuvil serve did not become ready:\n{self.stderr_text()}")

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8")
        except OSError:
            return ""

    def access_records(self) -> list[dict[str, Any]]:
        import json

        if not self.access_log.exists():
            return []
        return [json.loads(x) for x in self.access_log.read_text().splitlines() if x.strip()]

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, wait for the drain; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        return self.proc.returncode

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
