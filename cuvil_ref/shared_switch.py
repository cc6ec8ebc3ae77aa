"""A process-wide setting that nested and concurrent blocks share.

The first block to enter switches the setting on and keeps what ``on()`` returned (the state it
found); the last to leave hands that back to ``off()``. Blocks in between change nothing, so a
compile inside a compile, or two threads compiling at once, never switch it off under each
other. Used for the garbage-collector pause (``cuvil_ref/gc_pause.py``) and torch's lazy stack
lines during export (``cuvil_ref/frontend/lazy_stack_lines.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class SharedSwitch:
    """``hold()``: a context manager; ``on`` and ``off`` run under a lock, once per outermost
    block."""

    def __init__(self, on: Callable[[], Any], off: Callable[[Any], None]) -> None:
        self._on, self._off = on, off
        self._lock = threading.Lock()
        self._depth = 0
        self._found: Any = None

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._found = self._on()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    found, self._found = self._found, None
                    self._off(found)
