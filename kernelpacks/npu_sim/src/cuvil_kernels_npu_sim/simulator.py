"""Run a `Program`: bit-exact function, event-driven timing per queue, counters and energy.

The three queues (load, compute, store) each run their instructions in order. An instruction
starts when its queue is free and every token it pops is available; tokens carry the time their
pusher finished. LOAD and STORE share one DRAM channel (`dram_bytes_per_cycle`, charged per burst)
and see `dram_latency` before their data lands, but a queue may issue its next transfer while the
previous one is in flight. The compute queue pays the MAC array's cost per GEMM (see machine.py)
and the vector ALU's per ALU instruction. Double-buffered programs therefore overlap load,
compute and store, and stalls are attributed to the token or the DRAM channel that held them.

`mode="timed"` runs the ready queue with the earliest start (the timing reference).
`mode="random"` runs a random ready queue each step: a correct program gives the same bits in any
such interleaving, so a missing token shows up as wrong results; `check_hazards=True` (default)
also reports it deterministically through vector clocks (hazards.py).
"""

from __future__ import annotations

import collections
import contextlib
import random
from dataclasses import dataclass, field

import numpy as np

from cuvil_kernels_npu_sim.asm import format_insn
from cuvil_kernels_npu_sim.errors import DeadlockError, NpuSimError
from cuvil_kernels_npu_sim.hazards import HazardChecker
from cuvil_kernels_npu_sim.isa import Insn, Op, Queue, queue_of
from cuvil_kernels_npu_sim.machine import Machine
from cuvil_kernels_npu_sim.program import Program, from_dram, to_dram

_PREV = {Queue.LOAD: None, Queue.COMPUTE: Queue.LOAD, Queue.STORE: Queue.COMPUTE}
_NEXT = {Queue.LOAD: Queue.COMPUTE, Queue.COMPUTE: Queue.STORE, Queue.STORE: None}
Channel = tuple[Queue, Queue]


@dataclass
class Stats:
    cycles: int = 0
    macs: int = 0
    dram_bytes: int = 0
    dram_charged_bytes: int = 0
    sram_bytes: int = 0
    alu_ops: int = 0
    alu_muls: int = 0
    instructions: int = 0
    stream_cycles: int = 0  # array cycles streaming useful vectors (timing.py)
    fill_cycles: int = 0  # array preload, fill/drain and wavefront stalls
    alu_cycles: int = 0  # vector ALU instruction cycles
    dram_busy_cycles: int = 0  # cycles the DRAM channel transfers (burst-rounded bytes / rate)
    busy: dict[str, int] = field(default_factory=dict)
    stalls: dict[str, int] = field(default_factory=dict)
    energy_pj: dict[str, float] = field(default_factory=dict)
    leftover_tokens: int = 0


@dataclass
class TraceEntry:
    index: int
    queue: Queue
    start: int
    end: int
    text: str


@dataclass
class SimResult:
    outputs: dict[str, np.ndarray]
    stats: Stats
    trace: list[TraceEntry]
    program: Program


def _channels(insn: Insn, where: str) -> tuple[list[Channel], list[Channel]]:
    q = queue_of(insn)
    pops, pushes = [], []
    for flag, table, is_pop in (
        ("pop_prev", _PREV, True),
        ("pop_next", _NEXT, True),
        ("push_prev", _PREV, False),
        ("push_next", _NEXT, False),
    ):
        if getattr(insn, flag):
            other = table[q]
            if other is None:
                raise NpuSimError(
                    f"{where}: {flag} is invalid on the {q.name} queue (no neighbour)"
                )
            (pops if is_pop else pushes).append((other, q) if is_pop else (q, other))
    return pops, pushes


def _single_thread_blas() -> contextlib.AbstractContextManager[object]:
    """GEMM tiles are small; one BLAS thread beats a contended pool (measured ~5x on 2 cores)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own thread count
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def simulate(
    program: Program,
    inputs: dict[str, np.ndarray],
    *,
    mode: str = "timed",
    seed: int = 0,
    check_hazards: bool = True,
    keep_trace: bool = False,
) -> SimResult:
    """Run `program` on `inputs` (logical shapes, keyed by input region name)."""
    with _single_thread_blas():
        return _simulate(
            program,
            inputs,
            mode=mode,
            seed=seed,
            check_hazards=check_hazards,
            keep_trace=keep_trace,
        )


def _simulate(
    program: Program,
    inputs: dict[str, np.ndarray],
    *,
    mode: str = "timed",
    seed: int = 0,
    check_hazards: bool = True,
    keep_trace: bool = False,
) -> SimResult:
    cfg = program.config
    if mode not in ("timed", "random"):
        raise ValueError(f"simulate: mode must be 'timed' or 'random', got {mode!r}")
    missing = sorted(set(program.inputs) - set(inputs))
    if missing:
        raise ValueError(f"simulate {program.name}: missing inputs {missing}")
    dram = program.const_image.copy()
    for name, array in inputs.items():
        region = program.regions[name]
        dram[region.offset : region.offset + region.nbytes] = to_dram(region, array)
    machine = Machine(cfg, dram)
    checker = HazardChecker({m: a.size for m, a in machine.mems.items()}) if check_hazards else None
    rng = random.Random(seed)
    insns = program.insns
    order: dict[Queue, list[int]] = {q: [] for q in Queue}
    for i, insn in enumerate(insns):
        order[queue_of(insn)].append(i)
    head = dict.fromkeys(Queue, 0)
    free = dict.fromkeys(Queue, 0)
    fifos: dict[Channel, collections.deque] = collections.defaultdict(collections.deque)
    stats, trace = Stats(), []
    stalls: collections.Counter[str] = collections.Counter()
    busy: collections.Counter[str] = collections.Counter()
    bus_free, end_time = 0, 0
    chan_cache = {}

    def where(i: int) -> str:
        return f"{program.name}: instruction #{i} ({format_insn(insns[i])})"

    def candidate(q: Queue) -> tuple[int, int] | None:
        i = order[q][head[q]]
        if i not in chan_cache:
            chan_cache[i] = _channels(insns[i], where(i))
        pops = chan_cache[i][0]
        if any(not fifos[c] for c in pops):
            return None
        return max([free[q]] + [fifos[c][0][0] for c in pops]), i

    remaining = len(insns)
    while remaining:
        ready = {q: c for q in Queue if head[q] < len(order[q]) and (c := candidate(q))}
        if not ready:
            waits = [
                f"{q.name} queue at {where(order[q][head[q]])}"
                for q in Queue
                if head[q] < len(order[q])
            ]
            raise DeadlockError(
                f"{program.name}: deadlock, no token to pop for: " + "; ".join(waits)
            )
        q = rng.choice(sorted(ready)) if mode == "random" else min(ready, key=ready.__getitem__)
        start, i = ready[q]
        insn = insns[i]
        pops, pushes = chan_cache.pop(i)
        if checker is not None:
            checker.begin(q)
        latest: tuple[int, Queue | None] = (free[q], None)
        for c in pops:
            t, clock = fifos[c].popleft()
            latest = max(latest, (t, c[0]), key=lambda p: p[0])
            if checker is not None and clock is not None:
                checker.merge(q, clock)
        if latest[1] is not None and start > free[q]:
            stalls[f"{q.name.lower()}:wait_token_from_{latest[1].name.lower()}"] += start - free[q]
        machine.where = where(i)
        fx = machine.execute(insn)
        if checker is not None:
            checker.access(q, fx.accesses, machine.where)
        if insn.op in (Op.LOAD, Op.STORE):
            xfer = -(-fx.dram_charged_bytes // cfg.dram_bytes_per_cycle)
            xfer_start = max(start + cfg.issue_cycles, bus_free)
            stalls[f"{q.name.lower()}:dram_channel"] += xfer_start - start - cfg.issue_cycles
            bus_free = xfer_start + xfer
            stats.dram_busy_cycles += xfer
            free[q] = bus_free
            done = bus_free + cfg.dram_latency
        elif insn.op in (Op.GEMM, Op.DWCONV, Op.ALU, Op.SFU):
            done = free[q] = start + cfg.issue_cycles + fx.compute_cycles
        else:
            done = free[q] = start + 1
        busy[q.name.lower()] += free[q] - start
        snap = checker.snapshot(q) if checker is not None else None
        for c in pushes:
            fifos[c].append((done, snap))
        end_time = max(end_time, done)
        stats.macs += fx.macs
        stats.dram_bytes += fx.dram_bytes
        stats.dram_charged_bytes += fx.dram_charged_bytes
        stats.sram_bytes += fx.sram_bytes
        stats.alu_ops += fx.alu_ops
        stats.alu_muls += fx.alu_muls
        stats.stream_cycles += fx.stream_cycles
        stats.fill_cycles += fx.fill_cycles
        stats.alu_cycles += fx.alu_cycles
        if keep_trace:
            trace.append(TraceEntry(i, q, start, done, format_insn(insn)))
        head[q] += 1
        remaining -= 1
    stats.cycles = end_time
    stats.instructions = len(insns)
    stats.stalls = dict(stalls)
    stats.busy = dict(busy)
    stats.leftover_tokens = sum(len(f) for f in fifos.values())
    e = cfg.energy
    stats.energy_pj = {
        "mac": e.mac_pj * stats.macs,
        "sram": e.sram_pj_per_byte * stats.sram_bytes,
        "dram": e.dram_pj_per_byte * stats.dram_bytes,
        "alu": e.alu_pj_per_op * stats.alu_ops + e.alu_mul_pj * stats.alu_muls,
    }
    outputs = {name: from_dram(program.regions[name], dram) for name in program.outputs}
    return SimResult(outputs, stats, trace, program)
