"""The pack's threads: a team of helpers that join a parallel kernel only if they are free.

A run executes its steps on the calling thread. For a parallel step (a kernel that takes its
items from a shared counter, :mod:`cuvil_kernels_cpu.kernels.atomics`) the caller posts the same
bound call to each helper, runs it itself, then settles with each helper: one that has not
started yet is revoked (the caller never waits for a thread the OS has not scheduled), one that
is running is waited for (it finishes the item it holds). Items are split among whoever runs,
so a busy, shared machine costs parallelism, not latency spikes.

Hand-over: each helper has a few int64 words (``ctrl``: the posted step's number, the address
of its work counter, the number of the last step it finished). Between steps a helper spins in
native code with the GIL released (:mod:`cuvil_kernels_cpu.kernels.spin`) for up to
:data:`SPIN_US` microseconds -- first for a new post, then until the caller has started taking
items (so the caller has released the GIL and the helper does not sleep on it) -- and only
then sleeps on a semaphore; the caller likewise spins for a running helper to finish before it
falls back to waiting on an event. Sleeping on every step cost a futex wake per step, measured
at 20-40 us with two threads (docs/benchmarks.md): as long as a small layer. The spin is
bounded, so an idle team costs nothing and a loaded machine loses at most the spin.

The end of a step is ordered the same way. With a work array of
:data:`~cuvil_kernels_cpu.kernels.atomics.WORDS` words (the arena's), the caller takes items
from the front and the helpers from the back, and a helper that runs out of items waits in
native code until the caller, back from its own call, waits for it with the GIL released
(:func:`~cuvil_kernels_cpu.kernels.spin.wait_done`): otherwise both returned into Python at
once, and whichever found the GIL taken slept on it (10-15 us per step in this VM; measured on
MobileNetV2 batch 1, a one-process A/B: 0.81 of the time). And a helper that sees the caller
start a step whose items are already all taken does not join it (the kernels publish the item
count in the work array): a one-item step on the team cost 14.9 us with the helper joining and
2.6 us without, against 0.5 us on one thread.

The kernels release the GIL, so the caller and the helpers compute at the same time. A team
belongs to one arena instance, so two threads running the same module each have their own.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_kernels_cpu.kernels import atomics, spin

_IDLE, _POSTED, _RUNNING = 0, 1, 2
#: ctrl words
_SEQ, _WORK, _DONE, _WIDE = 0, 1, 2, 3
#: How long a thread spins for the other side before it sleeps.
SPIN_US = 200.0
_CALIBRATION_POLLS = 200_000


@functools.lru_cache(maxsize=1)
def polls_per_us() -> float:
    """Spin polls per microsecond on this CPU (timed once per process, best of three).

    Also compiles (or loads) the spin kernels, so a new helper does not spend its first
    steps in the compiler."""
    word = np.zeros(4, np.int64)
    addr = word.ctypes.data
    spin.wait_change(addr, 0, 10)
    spin.wait_equal(addr, 0, 10)
    spin.wait_posted(addr, 0, addr + 8, addr + 16, addr + 24, 10)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        spin.wait_change(addr, 0, _CALIBRATION_POLLS)
        best = min(best, time.perf_counter() - t0)
    return max(1.0, _CALIBRATION_POLLS / (best * 1e6))


def spin_polls() -> int:
    return int(SPIN_US * polls_per_us())


class _Helper(threading.Thread):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.wake = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.state = _IDLE
        self.sleeping = False
        self.seq = 0
        self.ctrl = np.zeros(4, np.int64)
        self.done_addr = self.ctrl.ctypes.data + 8 * _DONE  # (.ctypes costs ~1.5 us a call)
        self.task: Callable[[], Any] | None = None
        self.error: BaseException | None = None
        self.polls = spin_polls()
        self.start()

    def run(self) -> None:
        ctrl = self.ctrl
        seq_addr = ctrl.ctypes.data + 8 * _SEQ
        work_addr = ctrl.ctypes.data + 8 * _WORK
        done_addr = ctrl.ctypes.data + 8 * _DONE
        wide_addr = ctrl.ctypes.data + 8 * _WIDE
        last = 0
        while True:
            seq = spin.wait_posted(seq_addr, last, work_addr, done_addr, wide_addr, self.polls)
            if seq == last:
                with self.lock:
                    if ctrl[_SEQ] != last:  # posted meanwhile
                        continue
                    self.sleeping = True
                self.wake.acquire()
                continue
            last = seq
            if ctrl[_DONE] == seq:  # the native wait found every item taken: not joined
                continue
            with self.lock:
                if self.state != _POSTED or self.seq != seq:  # revoked before it started
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
                self.finished.set()  # ctrl[_DONE] is stored by the next wait_posted


class Team:
    """``threads - 1`` helpers plus the caller."""

    _count = 0

    def __init__(self, threads: int) -> None:
        Team._count += 1
        self.helpers = [_Helper(f"cuvil-cpu-{Team._count}.{i}") for i in range(threads - 1)]
        self.joined = 0  # helper participations, for the report
        self.seq = 0
        self.polls = spin_polls()
        # work counter addresses by id (the array is kept, so its id is not reused)
        self._addrs: dict[int, tuple[np.ndarray, int]] = {}

    def _address(self, work: np.ndarray) -> int:
        hit = self._addrs.get(id(work))
        if hit is None or hit[0] is not work:
            hit = (work, work.ctypes.data)
            self._addrs[id(work)] = hit
        return hit[1]

    def run(self, call: Callable[[], Any], work: np.ndarray) -> None:
        """Run ``call`` on the caller and on every free helper (see the module docstring);
        ``work`` is the step's work counter, already reset."""
        self.seq += 1
        seq = self.seq
        addr = self._address(work)
        settle = work.size >= atomics.WORDS  # front/back items, helpers settle at the end
        if settle:
            atomics.reset(work, threading.get_ident(), self.polls)
        for h in self.helpers:
            with h.lock:
                h.task = call
                h.error = None
                h.finished.clear()
                h.state = _POSTED
                h.seq = seq
                h.ctrl[_WORK] = addr
                h.ctrl[_WIDE] = settle
                h.ctrl[_SEQ] = seq
                wake, h.sleeping = h.sleeping, False
            if wake:
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
                if h.ctrl[_DONE] != seq:
                    if settle:
                        done = spin.wait_done(addr + 8 * atomics.WAITING, h.done_addr, seq,
                                              self.polls)  # fmt: skip
                    else:
                        done = spin.wait_equal(h.done_addr, seq, self.polls)
                    if not done:
                        h.finished.wait()
                self.joined += 1
                if h.error is not None:
                    err, h.error = h.error, None
                    raise err
