"""``cuvil serve``: HTTP (uvicorn), gRPC (grpc.aio) and Prometheus metrics on one event loop.

Start-up: the three listeners come up first (``/v2/health/live`` answers while models load, as
in Triton), then the repository loads; ``/v2/health/ready`` turns true once every selected
version is compiled and warmed up. With ``exit_on_error`` (the default) a model that fails to
load stops the server with its error; otherwise that model is reported unavailable.

Shutdown (SIGTERM, SIGINT or ``stop()``): readiness turns false and new requests get 503, while
the requests already received finish -- queued batches run, uvicorn completes open responses,
gRPC waits for its calls -- for at most ``drain_timeout`` seconds; then the listeners close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from cuvil_ref.serve.arrival import stamping_protocol
from cuvil_ref.serve.http_api import build_app
from cuvil_ref.serve.manager import ModelManager
from cuvil_ref.serve.metrics import ServerMetrics
from cuvil_ref.serve.telemetry import Telemetry

log = logging.getLogger("cuvil.serve")


@dataclass(frozen=True)
class ServeOptions:
    """Listener addresses and runtime knobs of ``cuvil serve``."""

    host: str = "127.0.0.1"
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    drain_timeout: float = 30.0
    exit_on_error: bool = True
    otlp_endpoint: str | None = None
    access_log: str | None = "-"
    body_timeout: float = 30.0
    blas_threads: int = 1  # per process; instances are the unit of parallelism (0: leave as is)
    trusted_keys: tuple[str, ...] = ()  # PEM public keys; when given, every version is signed
    poll_interval: float = 2.0  # seconds between repository polls (0: no hot reload)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the InferenceServer decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _uvicorn(app: Any, host: str, port: int) -> _Uvicorn:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=stamping_protocol() or "h11",
        loop="asyncio",
        timeout_graceful_shutdown=None,
    )
    return _Uvicorn(config)


class InferenceServer:
    """The running server; ``await run()`` serves until a signal or ``stop()``."""

    def __init__(self, repo: str | Path, options: ServeOptions | None = None) -> None:
        self.repo = Path(repo)
        self.options = options or ServeOptions()
        self.metrics = ServerMetrics()
        self.telemetry = Telemetry(
            otlp_endpoint=self.options.otlp_endpoint, access_log=self.options.access_log
        )
        from cuvil_ref.serve.rollout.controller import RolloutController
        from cuvil_ref.serve.verify import load_trusted_keys

        keys = load_trusted_keys(self.options.trusted_keys) if self.options.trusted_keys else None
        self.manager = ModelManager(self.repo, self.metrics, self.telemetry, trusted_keys=keys)
        self.rollouts = RolloutController(
            self.manager,
            poll_interval=self.options.poll_interval,
            drain_timeout=self.options.drain_timeout,
        )
        self.ports: dict[str, int] = {}
        self._stop = asyncio.Event()
        self._http: _Uvicorn | None = None
        self._metrics: _Uvicorn | None = None
        self._grpc: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._blas_limit: Any = None

    async def start(self) -> None:
        """Bring up the listeners, then load the repository."""
        from prometheus_client import make_asgi_app

        from cuvil_ref.serve.grpc_api import build_server

        o = self.options
        if o.blas_threads:
            # Each instance is a thread of its own: a multi-threaded BLAS under every instance
            # oversubscribes the cores, and OpenBLAS threads that spin on a busy machine make a
            # small GEMM 10-100x slower (measured in docs/benchmarks.md).
            from threadpoolctl import threadpool_limits

            self._blas_limit = threadpool_limits(limits=o.blas_threads, user_api="blas")
        self._http = _uvicorn(
            build_app(self.manager, body_timeout=o.body_timeout, rollouts=self.rollouts),
            o.host,
            o.http_port,
        )
        self._metrics = _uvicorn(make_asgi_app(self.metrics.registry), o.host, o.metrics_port)
        for name, server in (("http", self._http), ("metrics", self._metrics)):
            self._tasks.append(asyncio.ensure_future(server.serve()))
            while not server.started:
                if self._tasks[-1].done():
                    self._tasks[-1].result()  # re-raise the bind error
                    raise OSError(f"the {name} listener stopped during start-up")
                await asyncio.sleep(0.01)
            self.ports[name] = server.servers[0].sockets[0].getsockname()[1]
        self._grpc = build_server(self.manager, f"{o.host}:{o.grpc_port}")
        if not self._grpc.bound_port:
            raise OSError(f"cannot bind the gRPC port {o.host}:{o.grpc_port}")
        self.ports["grpc"] = self._grpc.bound_port
        await self._grpc.start()
        log.info("listening: %s", self.ports)
        await self.manager.load_all(exit_on_error=o.exit_on_error)
        self.rollouts.start()

    def stop(self) -> None:
        self._stop.set()

    async def run(self, on_ready: Any = None) -> None:
        """Start, call ``on_ready(server)``, serve until stopped, then drain and close."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        try:
            await self.start()
            if on_ready is not None:
                on_ready(self)
            await self._stop.wait()
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        o = self.options
        await self.rollouts.stop()
        self.manager.draining = True
        waits = [self.manager.drain(o.drain_timeout)]
        if self._grpc is not None:
            waits.append(self._grpc.stop(o.drain_timeout))
        if self._http is not None:
            self._http.should_exit = True
        await asyncio.gather(*waits, return_exceptions=True)
        if self._metrics is not None:
            self._metrics.should_exit = True
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.telemetry.shutdown()


def serve(repo: str | Path, options: ServeOptions | None = None) -> None:
    """Run the server in this process until SIGTERM/SIGINT (the CLI's entry point)."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    server = InferenceServer(repo, options)

    def announce(s: InferenceServer) -> None:
        p = s.ports
        print(
            f"cuvil serve: ready; HTTP {s.options.host}:{p['http']}, gRPC "
            f"{s.options.host}:{p['grpc']}, metrics {s.options.host}:{p['metrics']}",
            flush=True,
        )

    asyncio.run(server.run(on_ready=announce))
