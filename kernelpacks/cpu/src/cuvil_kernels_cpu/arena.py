"""One arena per program instance, carved by the compiler's memory plan, and the bound calls.

:func:`place` gives every buffer a step-made value owns (not inputs, constants or views) an
offset. The memory plan (``options["memory_plan"]``, made for the whole graph in graph order)
is used where it holds, and checked rather than trusted, against the program's own liveness --
step order, views extending their base's life, the pack's extra buffers (layout copies, packed
operands) that the plan never saw:

* a value takes its planned offset when the plan has a buffer of its name and size and no
  value live at the same time overlaps it -- except a legal in-place write: the plan says so,
  the writing step is pointwise, and the input's last use is that step;
* any other value (not planned, or in conflict) goes first-fit into space past the planned
  arena.

:func:`bind` allocates the arena once per instance and turns every step into a ``partial``
with its arrays bound, so a run is a loop of calls with no lookups. Several instances of one
program exist when several threads run the module at once (each has its own arena).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_kernels_cpu.lowering.context import ALIGN, Program, strided_view


@dataclass
class Placement:
    offsets: dict[str, int]
    arena_bytes: int
    planned_bytes: int
    from_plan: int = 0
    relocated: list[str] = field(default_factory=list)
    extra: int = 0
    in_place: int = 0

    def report(self) -> dict[str, Any]:
        return {
            "arena_bytes": self.arena_bytes,
            "planned_arena_bytes": self.planned_bytes,
            "values_at_planned_offsets": self.from_plan,
            "values_relocated": len(self.relocated),
            "pack_buffers_past_plan": self.extra,
            "in_place": self.in_place,
        }


@dataclass
class Instance:
    """A program bound to one arena: call ``calls`` in order after filling ``inputs``.

    ``works[i]`` is step i's work counter when its kernel shares items among threads (reset to
    0 before the call, which then goes through ``team``), else None."""

    arena: np.ndarray
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    calls: list[Callable[[], Any]]
    works: list[np.ndarray | None]
    team: Any = None


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _roots(program: Program) -> dict[str, str]:
    return {name: (b.base or name) for name, b in program.bufs.items()}


def liveness(program: Program) -> dict[str, tuple[int, int]]:
    """First writing step and last reading step of every arena-eligible root buffer."""
    root = _roots(program)
    live: dict[str, list[int]] = {}
    for i, step in enumerate(program.steps):
        for name in step.writes:
            r = root[name]
            if program.bufs[r].kind == "value":
                span = live.setdefault(r, [i, i])
                span[1] = max(span[1], i)
        for name in step.args:
            r = root[name]
            if r in live:
                live[r][1] = max(live[r][1], i)
    end = len(program.steps)
    for name in program.outputs:
        r = root[name]
        if r in live:
            live[r][1] = end
    return {k: (v[0], v[1]) for k, v in live.items()}


def place(program: Program, memory_plan: Any) -> Placement:
    live = liveness(program)
    root = _roots(program)
    planned = getattr(memory_plan, "buffers", {}) or {}
    planned_bytes = int(getattr(memory_plan, "arena_bytes", 0) or 0)
    placed: list[tuple[int, int, int, int, str]] = []  # offset, size, start, end, name
    offsets: dict[str, int] = {}
    result = Placement(offsets, 0, planned_bytes)
    writer = {}
    for i, step in enumerate(program.steps):
        for name in step.writes:
            writer.setdefault(root[name], (i, step))

    def clashes(off: int, size: int, start: int, end: int, name: str) -> bool:
        for o, s, a, b, other in placed:
            if b < start or a > end or o + s <= off or off + size <= o:
                continue
            if _legal_in_place(name, other, off, size, o, s, start, b, planned, writer, root):
                continue
            return True
        return False

    for name in sorted(live, key=lambda n: live[n]):
        start, end = live[name]
        size = _align(program.bufs[name].nbytes)
        plan = planned.get(name)
        if plan is not None and _align(int(plan.nbytes)) == size:
            off = int(plan.offset)
            if not clashes(off, size, start, end, name):
                offsets[name] = off
                placed.append((off, size, start, end, name))
                result.from_plan += 1
                if plan.in_place_of:
                    result.in_place += 1
                continue
            result.relocated.append(name)
        else:
            result.extra += 1
        off = _first_fit(placed, planned_bytes, size, start, end)
        offsets[name] = off
        placed.append((off, size, start, end, name))
    result.arena_bytes = max((o + s for o, s, *_ in placed), default=0)
    return result


def _first_fit(placed: list[tuple[int, int, int, int, str]], base: int, size: int, start: int,
               end: int) -> int:  # fmt: skip
    busy = sorted((o, o + s) for o, s, a, b, _ in placed if not (b < start or a > end))
    off = base
    for lo, hi in busy:
        if hi <= off:
            continue
        if off + size <= lo:
            break
        off = max(off, hi)
    return _align(off)


def _legal_in_place(name: str, other: str, off: int, size: int, o: int, s: int, start: int,
                    other_end: int, planned: Any, writer: dict, root: dict) -> bool:  # fmt: skip
    """``name`` may overwrite ``other``: same bytes, the plan says so, the writer is pointwise
    and reads ``other`` first, and ``other`` dies at that step."""
    plan = planned.get(name)
    if plan is None or plan.in_place_of is None or (off, size) != (o, s):
        return False
    i, step = writer[name]
    return (
        step.in_place
        and i == start
        and other_end == i
        and bool(step.args)
        and root[step.args[0]] == other
    )


def takes_work(fn: Any) -> bool:
    """Whether ``fn`` is a kernel that takes items from a work counter (its last argument)."""
    import inspect

    py = getattr(fn, "py_func", None)
    return py is not None and list(inspect.signature(py).parameters)[-1:] == ["work"]


def bind(program: Program, placement: Placement, team: Any = None) -> Instance:
    """Allocate one arena and bind every step to its arrays (and its work counter)."""
    from cuvil_kernels_cpu.kernels.atomics import WORDS

    raw = np.empty(placement.arena_bytes + ALIGN, np.uint8)
    shift = (-raw.ctypes.data) % ALIGN
    arena = raw[shift : shift + placement.arena_bytes]
    arrays: dict[str, np.ndarray] = {}
    for name, b in program.bufs.items():
        if b.kind == "const":
            assert b.array is not None
            arrays[name] = b.array
        elif b.kind == "input":
            arrays[name] = np.empty(b.shape, b.dtype)
        elif b.kind == "value":
            if name in placement.offsets:
                off = placement.offsets[name]
                arrays[name] = arena[off : off + b.nbytes].view(b.dtype).reshape(b.shape)
            else:  # made but never used by a step: still give it storage
                arrays[name] = np.empty(b.shape, b.dtype)
    for name, b in program.bufs.items():
        if b.kind == "view":
            assert b.base is not None
            root = arrays[b.base]
            if b.permuted is not None:
                arrays[name] = strided_view(root, b.permuted, b.shape)
            else:
                arrays[name] = root.reshape(b.shape)
    calls, works = [], []
    for step in program.steps:
        work = np.zeros(WORDS, np.int64) if takes_work(step.fn) else None
        extra = () if work is None else (work,)
        calls.append(functools.partial(
            step.fn, *[arrays[a] for a in step.args], *[arrays[w] for w in step.writes],
            *step.static, *extra,
        ))  # fmt: skip
        works.append(work)
    inputs = [arrays[n] for n in program.inputs]
    outputs = [arrays[n] for n in program.outputs]
    return Instance(raw, inputs, outputs, calls, works, team)
