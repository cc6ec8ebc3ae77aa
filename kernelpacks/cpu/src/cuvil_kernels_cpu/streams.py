"""Running a batch as streams of sub-batches, and choosing whether to (``batch_split``).

:mod:`cuvil_kernels_cpu.batch_split` proves a partition splittable and retypes it; here the
executable gets, per input signature, either ``None`` (run whole, the team sharing each layer)
or a :class:`Streams`: one single-threaded child executable per sub-batch size, run side by
side -- the caller runs the first sub-batch, threads of a pool of this module's own run the
others -- and the outputs joined along dim 0. With ``batch_split="auto"`` the whole batch and
the streams at each candidate sub-batch size (1, 2, 4... images) are timed on zeros when the
signature is first built (best of a few runs each, interleaved) and the fastest kept; the
figures and the reason go into the report.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_kernels_cpu.batch_split import NotSplittable, rebatch, sub_batches

#: Stream threads. A pool of its own: a stream never waits on another task, so callers that
#: are themselves pool tasks (``run_async``) cannot starve it.
_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="cuvil-cpu-stream"
)
#: Timed runs per way in the ``auto`` comparison (after one untimed run each); the best counts.
MEASURE_RUNS = 2
#: The whole batch must be this much faster than the streams to be kept (a tie within noise
#: goes to the streams). Since the team's steps got cheaper (front/back items, no GIL sleep at
#: the end of a step) the two measure within a few percent at batch 8, and the whole batch, won
#: on such a tie, ran slower in the interleaved benchmark than its best-of-two at build time:
#: one process, streams against whole, 2 threads (2026-12-06): ResNet-50 b8 0.984 of the time,
#: MobileNetV2 b8 0.916, ResNet-18 b8 0.967. Streams also share a loaded machine better (a
#: descheduled thread delays its own sub-batch only).
MARGIN = 0.03
#: A partition whose whole run is shorter than this is not split (nor timed further).
MIN_RUN_S = 2e-3
MODES = ("auto", "on", "off")


@dataclass
class Streams:
    """``streams`` threads taking sub-batches ``[lo, hi)`` of dim 0 in turn from ``ranges``,
    each run by the child executable for its size; the outputs are joined in order."""

    streams: int
    ranges: list[tuple[int, int]]
    children: dict[int, Any]

    def run(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        results: list[list[np.ndarray] | None] = [None] * len(self.ranges)
        taken = itertools.count()  # next() is atomic under the GIL

        def stream() -> None:
            while (k := next(taken)) < len(self.ranges):
                lo, hi = self.ranges[k]
                results[k] = self.children[hi - lo].run([a[lo:hi] for a in arrays])

        rest = [_POOL.submit(stream) for _ in range(self.streams - 1)]
        try:
            stream()
        finally:  # a failure on the caller still waits for the others
            for f in rest:
                f.result()
        n_out = len(results[0] or [])
        return [np.concatenate([r[i] for r in results if r is not None]) for i in range(n_out)]

    def first_child(self) -> Any:
        lo, hi = self.ranges[0]
        return self.children[hi - lo]


@dataclass
class Decision:
    """What ``batch_split`` chose for one signature, for the report."""

    streams: Streams | None
    record: dict[str, Any] = field(default_factory=dict)


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sub_batch_candidates(batch: int, streams: int) -> list[int]:
    """The sub-batch sizes ``auto`` tries: 1, 2, 4... while every stream still gets one."""
    sizes, size = [], 1
    while size * streams <= batch:
        sizes.append(size)
        size *= 2
    return sizes


def decide(
    mode: str,
    graph: Any,
    shapes: tuple[tuple[int, ...], ...],
    threads: int,
    make_child: Callable[[Any], Any],
    run_whole: Callable[[list[np.ndarray]], Any],
    dtypes: Sequence[Any],
    chunk: int = 1,
) -> Decision:
    """Split or not for ``shapes`` (see the module docstring). ``make_child(graph)`` builds a
    single-threaded executable; ``run_whole(arrays)`` runs the partition unsplit; ``chunk`` is
    the sub-batch size of ``on`` (``auto`` measures each of :func:`sub_batch_candidates`)."""
    batch = shapes[0][0] if shapes and shapes[0] else 0
    if mode == "off":
        return Decision(None, {"split": False, "why": "batch_split=off"})
    if threads < 2 or batch < 2:
        return Decision(None, {"split": False, "why": f"{threads} thread(s), batch {batch}"})
    n = min(threads, batch)
    chunks = sub_batch_candidates(batch, n) if mode == "auto" else [chunk]
    plans = {c: sub_batches(batch, -(-batch // c)) for c in chunks}
    sizes = sorted({hi - lo for r in plans.values() for lo, hi in r}, reverse=True)
    try:
        graphs = {m: rebatch(graph, batch, m) for m in sizes}
    except NotSplittable as exc:
        return Decision(None, {"split": False, "why": f"not splittable: {exc}"})

    used = {c: sorted({hi - lo for lo, hi in r}, reverse=True) for c, r in plans.items()}

    def record_of(c: int) -> dict[str, Any]:
        return {"streams": n, "sub_batch_sizes": used[c], "sub_batches": len(plans[c])}

    def streams_of(c: int) -> Streams:
        return Streams(n, plans[c], {m: children[m] for m in used[c]})

    # Timed on zeros: the whole batch unsplit, and per sub-batch size one round of the streams
    # (each stream one sub-batch, side by side) scaled by the rounds a run takes -- a fraction
    # of the cost of timing whole split runs.
    zeros = [np.zeros(s, d) for s, d in zip(shapes, dtypes, strict=True)]
    whole = float("inf")
    if mode == "auto":
        run_whole(zeros)
        whole = min(_timed(lambda: run_whole(zeros)) for _ in range(MEASURE_RUNS))
        if whole < MIN_RUN_S:
            why = f"a run takes {whole * 1e3:.2f} ms, too short to gain from streams"
            return Decision(None, {**record_of(chunks[0]), "split": False, "why": why})
    children = {m: make_child(g) for m, g in graphs.items()}
    if mode == "on":
        record = {**record_of(chunk), "split": True, "why": "batch_split=on"}
        return Decision(streams_of(chunk), record)
    rounds: dict[int, tuple[Streams, list[np.ndarray]]] = {}
    for c in chunks:
        first = Streams(n, plans[c][:n], children)
        head = [z[: plans[c][n - 1][1]] for z in zeros]
        first.run(head)
        rounds[c] = (first, head)
    part = dict.fromkeys(chunks, float("inf"))
    for _ in range(MEASURE_RUNS):
        whole = min(whole, _timed(lambda: run_whole(zeros)))
        for c, (first, head) in rounds.items():
            for _ in range(n):  # a round is about 1/n of a run: as many of them as runs' worth
                part[c] = min(part[c], _timed(lambda f=first, h=head: f.run(h)))
    split = {c: part[c] * len(plans[c]) / n for c in chunks}
    best = min(chunks, key=lambda c: split[c])
    chosen = whole >= split[best] * (1.0 - MARGIN)
    measured = {"whole": round(whole * 1e3, 3), "streams": round(split[best] * 1e3, 3)}
    if len(chunks) > 1:
        measured["streams_by_sub_batch"] = {str(c): round(t * 1e3, 3) for c, t in split.items()}
    record = {**record_of(best), "split": chosen, "measured_ms": measured,
              "why": "measured (batch_split=auto)"}  # fmt: skip
    return Decision(streams_of(best) if chosen else None, record)


__all__ = ["MODES", "Decision", "Streams", "decide", "sub_batch_candidates"]
