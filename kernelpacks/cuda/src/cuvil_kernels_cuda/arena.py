"""Intermediates in one device arena: recorded launches rebound onto views a memory plan carves.

The executable records a partition's launches with every value in its own device buffer. Then
:func:`place` moves the intermediates (values made and consumed inside the partition) into one
arena at the offsets of the compiler's memory plan and rebinds the recorded launch arguments to
typed views of it. The plan was made for the whole graph, so nothing is taken on trust: what a
launch touches is read from the device addresses of its arguments, and

* a value stays in its own buffer when it shares memory with an input, output or constant (a
  reshape of one), when its first use is not a launch of its own node (its content came from the
  host at lowering), when a launch sees it through a non-contiguous or partial view, or when the
  plan has no static buffer of its size;
* a value whose planned bytes overlap another arena value's while both are live (measured in
  launches) moves to a fresh slot past the planned arena -- except a legal in-place write: the
  plan says so, the node is one pointwise launch (each thread reads element i, then writes it) and
  the input's last use is that launch.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_kernels_cuda import device
from cuvil_kernels_cuda.kernels.common import Launch
from cuvil_kernels_cuda.lower_float import BINARY, UNARY
from cuvil_ref.ir.graph import Graph

#: Ops whose lowering is one pointwise launch reading element i before writing element i.
IN_PLACE_OPS = frozenset({*UNARY, *BINARY, "clamp", "hardtanh", "fused_elementwise"})
RELOCATE_ALIGN = device.BufferPool.ALIGN


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
    relocated: tuple[str, ...] = ()
    in_place: tuple[str, ...] = ()
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
    memory_plan: Any,
    fixed: Sequence[Any],
) -> ArenaResult:
    """Move eligible intermediates of ``graph`` into one arena (see the module docstring).

    ``raw`` maps every node output to the device array its emit returned, ``node_launches[i]``
    are the indices into ``log`` recorded for node ``i``, ``fixed`` are the arrays that must stay
    put (partition inputs, outputs and constants).
    """
    outputs = {v.name for v in graph.outputs}
    node_of = {v.name: i for i, n in enumerate(graph.nodes) for v in n.outputs}
    buffers = getattr(memory_plan, "buffers", None) or {}
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
    for g in groups:
        if g.ok and (g.first < 0 or g.first not in node_launches[g.node]):
            g.ok = False
    live = sorted((g for g in groups if g.ok), key=lambda g: g.first)
    planned = int(getattr(memory_plan, "arena_bytes", 0) or 0)
    bump = -(-planned // RELOCATE_ALIGN) * RELOCATE_ALIGN
    relocated: list[str] = []
    in_place: list[str] = []
    placed: list[_Group] = []
    for g in live:
        g.offset = buffers[g.names[0]].offset
        clash = [p for p in placed if _bytes_overlap(p, g) and not (p.last < g.first)]
        if clash and _legal_in_place(graph, g, clash, buffers, node_launches, log):
            in_place.append(g.names[0])
        elif clash:
            g.offset, bump = bump, bump + -(-g.nbytes // RELOCATE_ALIGN) * RELOCATE_ALIGN
            relocated.append(g.names[0])
        placed.append(g)
    n_separate = sum(1 for g in groups if not g.ok and g.names) + len(graph.inputs)
    if not placed:
        return ArenaResult(list(log), separate_buffers=n_separate)
    used = max(g.offset + g.nbytes for g in placed)
    pool = device.BufferPool(arena_nbytes=used)
    launches = [
        Launch(rec.kernel, rec.grid, rec.block, tuple(_rebind(a, placed, pool) for a in rec.args))
        for rec in log
    ]
    return ArenaResult(
        launches,
        pool,
        used,
        tuple(n for g in placed for n in g.names),
        sum(g.nbytes for g in placed),
        tuple(relocated),
        tuple(in_place),
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
    # The first-defined value names the group: its plan buffer gives the offset.
    values = {v.name: (i, v) for i, n in enumerate(graph.nodes) for v in n.outputs}
    g.names.sort(key=lambda n: values[n][0])
    for name in g.names:
        buf = buffers.get(name)
        static = all(isinstance(d, int) for d in values[name][1].type.shape)
        if name in outputs or not static or buf is None:
            return False
        if int(buf.nbytes) != g.nbytes or int(raw[name].nbytes) != g.nbytes:
            return False
    return True


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


def _bytes_overlap(a: _Group, b: _Group) -> bool:
    return a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes


def _legal_in_place(
    graph: Graph,
    g: _Group,
    clash: list[_Group],
    buffers: Mapping[str, Any],
    node_launches: Sequence[range],
    log: Sequence[Launch],
) -> bool:
    """``g`` may overwrite the one clashing group: a planned in-place pointwise single launch."""
    if len(clash) != 1 or buffers[g.names[0]].in_place_of is None:
        return False
    src = clash[0]
    if graph.nodes[g.node].op not in IN_PLACE_OPS or len(node_launches[g.node]) != 1:
        return False
    if (src.offset, src.nbytes) != (g.offset, g.nbytes) or src.last != g.first:
        return False
    rec = log[g.first]
    touching = 0
    for arg in rec.args:
        ext = _extent(arg)
        if ext is not None and ext[0] < src.start + src.nbytes and src.start < ext[0] + ext[1]:
            touching += 1
    return touching == 1  # only the input is read from src's bytes; the output is g's own


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
