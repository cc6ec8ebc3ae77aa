"""The pack's threads: a team of helpers that join a parallel kernel only if they are free.

A run executes its steps on the calling thread. For a parallel step (a kernel that takes its
items from a shared counter, :mod:`cuvil_kernels_cpu.kernels.atomics`) the caller posts the same
bound call to each helper, runs it itself, then settles with each helper: one that has not
started yet is revoked (the caller never waits for a thread the OS has not scheduled), one that
is running is waited for (it finishes the item it holds). Items are split among whoever runs,
so a busy, shared machine costs parallelism, not latency spikes.

Helpers are daemon threads that sleep on a semaphore; the kernels release the GIL, so the
caller and the helpers compute at the same time. A team belongs to one arena instance, so two
threads running the same module each have their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_IDLE, _POSTED, _RUNNING = 0, 1, 2


class _Helper(threading.Thread):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.wake = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.state = _IDLE
        self.task: Callable[[], Any] | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        while True:
            self.wake.acquire()
            with self.lock:
                if self.state != _POSTED:  # revoked before it woke up
                    continue
                self.state = _RUNNING
                task = self.task
            try:
                if task is not None:
                    task()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                self.error = exc
            finally:
                with self.lock:
                    self.state = _IDLE
                self.finished.set()


class Team:
    """``threads - 1`` helpers plus the caller."""

    _count = 0

    def __init__(self, threads: int) -> None:
        Team._count += 1
        self.helpers = [_Helper(f"cuvil-cpu-{Team._count}.{i}") for i in range(threads - 1)]
        self.joined = 0  # helper participations, for the report

    def run(self, call: Callable[[], Any]) -> None:
        """Run ``call`` on the caller and on every free helper (see the module docstring)."""
        for h in self.helpers:
            with h.lock:
                h.task = call
                h.error = None
                h.finished.clear()
                h.state = _POSTED
            h.wake.release()
        try:
            call()
        finally:
            for h in self.helpers:
                with h.lock:
                    if h.state == _POSTED:
                        h.state = _IDLE
                        h.task = None
                        continue
                h.finished.wait()
                self.joined += 1
                if h.error is not None:
                    err, h.error = h.error, None
                    raise err
