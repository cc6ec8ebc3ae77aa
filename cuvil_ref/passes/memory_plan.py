"""Static memory planning: liveness intervals -> offsets in one arena, with reuse and in-place.

Every node output gets a buffer live from its defining node to its last reader (graph outputs
live to the end). Buffers are placed greedily by decreasing size at the lowest aligned offset that
does not overlap any placed buffer whose lifetime intersects (TFLite's "greedy by size"). An
elementwise node whose input dies at that node and has the same byte size writes in place into
the input's buffer; a view (``families.VIEWS``: reshape-like ops, the same bytes under a new
shape) of an arena value shares that value's buffer, which then lives as long as the last of
them. Graph inputs and constants are not in the arena (the caller owns them); a view of one gets
a buffer of its own. The compiler plans each partition graph after partitioning, so the plan's
lifetimes are in the order the partition runs its nodes, and packs use it as given.
Symbolic shapes are planned for ``bindings`` (default: every symbol = 1) and the plan says so.

A control-flow node is one node here: its results are buffers of this arena like any node's, and
its operands live until it runs. Each of its regions gets a plan of its own (``regions``, keyed by
the node's first result): a region runs while the enclosing arena is live, with its own arena.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.ir.graph import Graph
from cuvil_ref.ops import families, get_op

ALIGNMENT = 64


@dataclass(frozen=True)
class Buffer:
    value: str
    offset: int
    nbytes: int
    start: int  # index of the defining node
    end: int  # index of the last reader (len(nodes) for graph outputs)
    in_place_of: str | None = None  # written over this dying value's buffer (same offset)
    view_of: str | None = None  # the same bytes as this value (a view; same offset)


@dataclass(frozen=True)
class MemoryPlan:
    buffers: dict[str, Buffer] = field(default_factory=dict)
    arena_bytes: int = 0
    naive_bytes: int = 0
    bindings: dict[str, int] = field(default_factory=dict)
    #: first result of a control-flow node -> one plan per region
    regions: dict[str, tuple[MemoryPlan, ...]] = field(default_factory=dict)

    @property
    def peak_bytes(self) -> int:
        """This arena plus the largest arena any of its regions (recursively) needs on top."""
        nested = [p.peak_bytes for plans in self.regions.values() for p in plans]
        return self.arena_bytes + max(nested, default=0)

    def report(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.regions:
            extra["regions"] = {k: [p.report() for p in v] for k, v in self.regions.items()}
            extra["peak_with_regions_bytes"] = self.peak_bytes
        return {
            "planned_peak_bytes": self.arena_bytes,
            "naive_sum_bytes": self.naive_bytes,
            "saving": 1.0 - self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0,
            "buffers": len(self.buffers),
            "in_place": sum(1 for b in self.buffers.values() if b.in_place_of),
            "views": sum(1 for b in self.buffers.values() if b.view_of),
            "symbol_bindings": dict(self.bindings),
            **extra,
        }


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def plan_memory(graph: Graph, bindings: dict[str, int] | None = None) -> MemoryPlan:
    """Plan the arena for ``graph``'s intermediates and outputs."""
    binds = dict(bindings or {})
    for v in graph.inputs:
        for d in v.type.shape:
            if isinstance(d, str):
                binds.setdefault(d, 1)

    def nbytes(t: Any) -> int:
        n = 1
        for d in t.shape:
            n *= binds.get(d, 1) if isinstance(d, str) else d
        return n * t.dtype.itemsize

    end = len(graph.nodes)
    start: dict[str, int] = {}
    last: dict[str, int] = {}
    size: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for v in node.inputs:
            if v.name in start:
                last[v.name] = i
        for v in node.outputs:
            start[v.name] = i
            last[v.name] = i
            size[v.name] = nbytes(v.type)
    for v in graph.outputs:
        if v.name in start:
            last[v.name] = end

    # Views share their input's buffer; in-place candidates take over their first input's
    # buffer when that buffer dies here (every value sharing it is read for the last time).
    alias: dict[str, str] = {}
    views: dict[str, str] = {}
    in_place: dict[str, str] = {}
    for i, node in enumerate(graph.nodes):
        if len(node.outputs) != 1 or not node.inputs:
            continue
        src, out = node.inputs[0].name, node.outputs[0].name
        if src not in start or size[src] != size[out]:
            continue
        root = alias.get(src, src)
        if node.op in families.VIEWS:
            alias[out], views[out] = root, src
            last[root] = max(last[root], last[out])
            continue
        if not families.is_pointwise(get_op(node.op)):
            continue
        single_use = sum(1 for v in node.inputs if v.name == src) == 1
        if last[root] == i and single_use:
            alias[out], in_place[out] = root, src
            last[root] = max(last[root], last[out])

    roots = [n for n in start if n not in alias]
    order = sorted(roots, key=lambda n: (-size[n], start[n]))
    placed: list[tuple[int, int, int, int]] = []  # offset, size, start, end
    offsets: dict[str, int] = {}
    for name in order:
        s, e, sz = start[name], last[name], _align(size[name])
        candidates = sorted((o, osz) for (o, osz, os_, oe) in placed if not (oe < s or os_ > e))
        offset = 0
        for o, osz in candidates:
            if offset + sz <= o:
                break
            offset = max(offset, o + osz)
        offsets[name] = offset
        placed.append((offset, sz, s, e))
    buffers = {}
    for name in start:
        root = alias.get(name, name)
        buffers[name] = Buffer(
            name, offsets[root], size[name], start[name], last[name], in_place.get(name),
            views.get(name),
        )  # fmt: skip
    arena = max((o + sz for (o, sz, _, _) in placed), default=0)
    naive = sum(_align(size[n]) for n in start)
    regions = {
        n.outputs[0].name: tuple(plan_memory(r, binds) for r in n.regions)
        for n in graph.nodes
        if n.regions and n.outputs
    }
    return MemoryPlan(buffers, arena, naive, binds, regions)


def memory_report(plans: list[MemoryPlan]) -> dict[str, Any]:
    """The report of several partitions' plans: totals (each partition has its own arena) and
    each partition's own report."""
    arena = sum(p.arena_bytes for p in plans)
    naive = sum(p.naive_bytes for p in plans)
    bindings: dict[str, int] = {}
    for p in plans:
        bindings.update(p.bindings)
    return {
        "planned_peak_bytes": arena,
        "naive_sum_bytes": naive,
        "saving": 1.0 - arena / naive if naive else 0.0,
        "buffers": sum(len(p.buffers) for p in plans),
        "in_place": sum(1 for p in plans for b in p.buffers.values() if b.in_place_of),
        "views": sum(1 for p in plans for b in p.buffers.values() if b.view_of),
        "symbol_bindings": bindings,
        "partitions": [p.report() for p in plans],
    }
