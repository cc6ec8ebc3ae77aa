"""No cyclic garbage collection while Cuvil compiles.

A compile allocates tens of thousands of short-lived objects (torch.export's FakeTensors and
graphs, the IR, the passes' rewrites). In a process that has imported torch and
``transformers`` those allocations trigger a full (generation 2) collection, which walks every
object the process holds -- about 430,000 there -- and finds almost nothing to free: measured in
a fresh process on the BERT-base encoder of ``benchmarks/compile_time.py``, one such collection
took 0.26 s of a 0.97 s compile (Llama-like stack: 0.23 of 1.03 s), and pausing the collector
brought the compiles to 0.70 and 0.85 s. The garbage of a compile is mostly freed by reference
counting; the cycles it leaves (about 46,000 objects on BERT) are collected by the first
collection after the compile.

:func:`gc_paused` disables the collector for its block and restores the state it found, so a
program that disabled the collector itself keeps it disabled. Nested and concurrent compiles
share one pause (a counter): the collector comes back when the last of them ends.
``CUVIL_GC_DURING_COMPILE=1`` leaves the collector alone (for a compile that would leave many
cycles in a process short of memory).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from cuvil_ref.shared_switch import SharedSwitch

P = ParamSpec("P")
R = TypeVar("R")


def _disable() -> bool:
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def _restore(was_enabled: bool) -> None:
    if was_enabled:
        gc.enable()


_PAUSE = SharedSwitch(_disable, _restore)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Within the block, the cyclic garbage collector does not run."""
    if os.environ.get("CUVIL_GC_DURING_COMPILE") == "1":
        yield
        return
    with _PAUSE.hold():
        yield


def without_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: ``fn`` runs under :func:`gc_paused`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            return fn(*args, **kwargs)

    return wrapper
