"""When a request arrived: the moment uvicorn parsed its first bytes, not when the app saw it.

Under load a request waits on the event loop between uvicorn reading it from the socket and the
ASGI handler starting (other requests' parsing, batching, responses run first). A client counts
that wait, so the server's latency histogram must too: the HTTP protocol below stamps
``scope["cuvil.arrival"]`` (``time.monotonic()``) as the parser meets the start of each message,
and the infer handler measures from there. uvicorn takes the protocol class as its ``http``
setting; with the h11 implementation (httptools not installed) the handler's own start is used.
"""

from __future__ import annotations

import time
from typing import Any

ARRIVAL_KEY = "cuvil.arrival"


def stamping_protocol() -> type[Any] | None:
    """uvicorn's httptools protocol with the arrival stamp, or None without httptools."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class StampingHttpToolsProtocol(HttpToolsProtocol):
        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope[ARRIVAL_KEY] = time.monotonic()  # type: ignore[typeddict-unknown-key]

    return StampingHttpToolsProtocol


def arrival(scope: Any) -> float:
    """The request's arrival stamp, or now when the protocol did not stamp it."""
    stamp = scope.get(ARRIVAL_KEY)
    return float(stamp) if stamp is not None else time.monotonic()
