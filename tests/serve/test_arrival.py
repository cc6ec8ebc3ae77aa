"""The arrival stamp: a request's latency counts from when uvicorn parsed it, not from when the
handler started (the wait in between is what a client sees and the histogram must show)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from cuvil_ref.serve.arrival import ARRIVAL_KEY, arrival, stamping_protocol  # noqa: E402
from tests.serve.prometheus_server import free_port  # noqa: E402


async def _slow(request: Request) -> JSONResponse:
    started = time.monotonic()
    await asyncio.sleep(float(request.query_params.get("sleep", "0")))
    return JSONResponse({"arrival": arrival(request.scope), "started": started})


@pytest.fixture
def server() -> Iterator[int]:
    port = free_port()
    config = uvicorn.Config(
        Starlette(routes=[Route("/", _slow)]),
        host="127.0.0.1",
        port=port,
        http=stamping_protocol(),
        log_level="warning",
        lifespan="off",
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert srv.started
    yield port
    srv.should_exit = True
    thread.join(10)


def _responses(sock: socket.socket, n: int) -> list[dict[str, float]]:
    """Read ``n`` HTTP/1.1 responses with JSON bodies from ``sock``."""
    buf, out = b"", []
    sock.settimeout(10)
    while len(out) < n:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            if len(rest) >= length:
                out.append(json.loads(rest[:length]))
                buf = rest[length:]
                continue
        chunk = sock.recv(65536)
        assert chunk, "server closed the connection"
        buf += chunk
    return out


def test_stamp_precedes_the_handler(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        (r,) = _responses(s, 1)
    assert 0 <= r["started"] - r["arrival"] < 5


def test_a_queued_request_counts_its_wait(server: int) -> None:
    """Two pipelined requests in one packet: uvicorn parses (and stamps) both at once but starts
    the second handler only after the first answered, 0.3 s later; that wait is counted."""
    req = b"GET /?sleep=%s HTTP/1.1\r\nhost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.sendall(req % b"0.3" + req % b"0")
        first, second = _responses(s, 2)
    assert second["started"] - second["arrival"] >= 0.25
    assert abs(second["arrival"] - first["arrival"]) < 0.2


def test_without_a_stamp_now_is_used() -> None:
    before = time.monotonic()
    assert arrival({}) >= before
    assert arrival({ARRIVAL_KEY: 1.5}) == 1.5
