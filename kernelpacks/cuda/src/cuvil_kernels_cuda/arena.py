"""Intermediates in one device arena: recorded launches rebound onto views the memory plan carves.

The executable records a partition's launches with every value in its own device buffer. Then
:func:`place` moves the intermediates (values made and consumed inside the partition) into one
arena at the offsets of the memory plan the compiler made for this partition, and rebinds the
recorded launch arguments to typed views of it. The plan is used as given -- buffer reuse,
pointwise ops written over their dying input, views sharing their input's bytes: it is exact for
the partition's node order, which is the launch order. What a launch touches is read from the
device addresses of its arguments, and a value keeps its own buffer when the kernel library did
not give it memory of its own (it shares bytes with an input, output or constant, or with another
value the plan does not say it shares with), when its content came from the host at lowering
(its first use is not a launch of its own node), when a launch sees it through a
non-contiguous or partial view, or when its shape is symbolic.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_kernels_cuda import device
from cuvil_kernels_cuda.kernels.common import Launch
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.memory_plan import MemoryPlan


@dataclass
class _Group:
    """Device memory of one or more values (a value and its views): [start, start + nbytes)."""

    start: int
    nbytes: int
    names: list[str]
    node: int  # defining node of the first value
    ok: bool = True
    first: int = -1  # first and last launch index that touches it
    last: int = -1
    offset: int = -1


@dataclass(frozen=True)
class ArenaResult:
    """Launches rebound onto the arena (or unchanged), and what went where."""

    launches: list[Launch]
    pool: device.BufferPool | None = None
    arena_bytes: int = 0
    arena_values: tuple[str, ...] = ()
    arena_naive_bytes: int = 0
    in_place: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    separate_buffers: int = 0


def _extent(x: Any) -> tuple[int, int, bool] | None:
    """(address, byte span, contiguous) of a device array, None for anything else or empty."""
    if not device.is_device_array(x) or int(x.size) == 0:
        return None
    addr = device.device_address(x)
    if addr is None:
        return None
    itemsize = np.dtype(x.dtype).itemsize
    lo = sum((n - 1) * s for n, s in zip(x.shape, x.strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(x.shape, x.strides, strict=True) if s > 0)
    return addr + lo, hi - lo + itemsize, bool(x.is_c_contiguous())


def place(
    graph: Graph,
    raw: Mapping[str, Any],
    node_launches: Sequence[range],
    log: Sequence[Launch],
    memory_plan: MemoryPlan,
    fixed: Sequence[Any],
) -> ArenaResult:
    """Move eligible intermediates of ``graph`` into one arena (see the module docstring).

    ``raw`` maps every node output to the device array its emit returned, ``node_launches[i]``
    are the indices into ``log`` recorded for node ``i``, ``fixed`` are the arrays that must stay
    put (partition inputs, outputs and constants).
    """
    outputs = {v.name for v in graph.outputs}
    node_of = {v.name: i for i, n in enumerate(graph.nodes) for v in n.outputs}
    buffers = memory_plan.buffers
    groups: list[_Group] = []
    for name in node_of:  # one group per distinct (start, span), merged below on overlap
        ext = _extent(raw[name])
        if ext is None:
            continue
        groups.append(_Group(ext[0], ext[1], [name], node_of[name], ok=ext[2]))
    for x in fixed:
        ext = _extent(x)
        if ext is not None:
            groups.append(_Group(ext[0], ext[1], [], -1, ok=False))
    groups = _merge(groups)
    for g in groups:
        g.ok = g.ok and _eligible(graph, g, raw, buffers, outputs)
    _mark_uses(groups, log)
    placed = [
        g for g in groups if g.ok and g.first >= 0 and g.first in node_launches[g.node]
    ]
    n_separate = sum(1 for g in groups if g.names and g not in placed) + len(graph.inputs)
    if not placed:
        return ArenaResult(list(log), separate_buffers=n_separate)
    for g in placed:
        g.offset = buffers[g.names[0]].offset
    used = max(g.offset + g.nbytes for g in placed)
    pool = device.BufferPool(arena_nbytes=used)
    launches = [
        Launch(rec.kernel, rec.grid, rec.block, tuple(_rebind(a, placed, pool) for a in rec.args))
        for rec in log
    ]
    names = tuple(n for g in placed for n in g.names)
    return ArenaResult(
        launches,
        pool,
        used,
        names,
        sum(g.nbytes for g in placed),
        tuple(n for n in names if buffers[n].in_place_of is not None),
        tuple(n for n in names if buffers[n].view_of is not None),
        n_separate,
    )


def _merge(groups: list[_Group]) -> list[_Group]:
    """Union groups whose byte ranges overlap; a merged group is eligible only if all parts are
    eligible and cover exactly the same bytes (a value and its reshapes)."""
    out: list[_Group] = []
    for g in sorted(groups, key=lambda g: (g.start, -g.nbytes)):
        if out and g.start < out[-1].start + out[-1].nbytes:
            top = out[-1]
            same = g.start == top.start and g.nbytes == top.nbytes
            top.ok = top.ok and g.ok and same
            top.nbytes = max(top.nbytes, g.start + g.nbytes - top.start)
            top.names.extend(g.names)
            if g.node >= 0 and (top.node < 0 or g.node < top.node):
                top.node = g.node
        else:
            out.append(g)
    return out


def _eligible(
    graph: Graph, g: _Group, raw: Mapping[str, Any], buffers: Mapping[str, Any], outputs: set[str]
) -> bool:
    if not g.names or g.node < 0:
        return False
    # The first-defined value names the group: its plan buffer gives the offset. Values the
    # library put in one buffer must be values the plan puts at one offset (a view and its
    # input), else the plan's reuse of those bytes would not hold for them.
    values = {v.name: (i, v) for i, n in enumerate(graph.nodes) for v in n.outputs}
    g.names.sort(key=lambda n: values[n][0])
    offsets = set()
    for name in g.names:
        buf = buffers.get(name)
        static = all(isinstance(d, int) for d in values[name][1].type.shape)
        if name in outputs or not static or buf is None:
            return False
        if int(buf.nbytes) != g.nbytes or int(raw[name].nbytes) != g.nbytes:
            return False
        offsets.add(buf.offset)
    return len(offsets) == 1


def _mark_uses(groups: list[_Group], log: Sequence[Launch]) -> None:
    """First/last launch of each group; a partial or non-contiguous view makes it ineligible."""
    starts = [g.start for g in groups]
    for i, rec in enumerate(log):
        for arg in rec.args:
            ext = _extent(arg)
            if ext is None:
                continue
            addr, span, contiguous = ext
            for g in _overlapping(groups, starts, addr, span):
                g.first = i if g.first < 0 else g.first
                g.last = i
                inside = g.start <= addr and addr + span <= g.start + g.nbytes
                aligned = (addr - g.start) % np.dtype(arg.dtype).itemsize == 0
                if not (contiguous and inside and aligned):
                    g.ok = False


def _overlapping(groups: list[_Group], starts: list[int], addr: int, span: int) -> list[_Group]:
    i = max(bisect.bisect_right(starts, addr) - 1, 0)
    hits = []
    while i < len(groups) and groups[i].start < addr + span:
        g = groups[i]
        if g.start + g.nbytes > addr:
            hits.append(g)
        i += 1
    return hits


def _rebind(arg: Any, placed: list[_Group], pool: device.BufferPool) -> Any:
    ext = _extent(arg)
    if ext is None:
        return arg
    for g in placed:
        if g.start <= ext[0] < g.start + g.nbytes:
            slot = device.Slot(
                g.offset + ext[0] - g.start, tuple(arg.shape), np.dtype(arg.dtype).name
            )
            return pool.view(slot)
    return arg
