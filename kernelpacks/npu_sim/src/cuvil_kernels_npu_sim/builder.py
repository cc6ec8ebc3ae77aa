"""Emit a `Program`: DRAM regions, registers set only when they change, a micro-op cache, and the
double-buffering token protocol (`Pipeline`).

Pipeline protocol, for steps k = 0..n-1 grouped into output tiles t = 0..T-1:
* load step k pops a "buffer free" token from compute (k >= 2) before it overwrites anything, and
  pushes "data ready" after its last load (a NOP when it loads nothing);
* compute step k pops "data ready", and at the first step of tile t >= 2 also pops "accumulator
  free" from store; after its last instruction it pushes "buffer free" (k + 2 < n) and, at the
  last step of a tile, "tile ready" to store;
* store of tile t pops "tile ready" and pushes "accumulator free" (t + 2 < T, or the last tile,
  whose token FINISH pops).
Each resource a step loads flips between two slots only when its contents change, so the slot a
load overwrites was last used by step k - 2 or earlier: that is what the tokens guarantee.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.isa import REGISTERS, DType, Insn, Mem, Op, Queue, make, queue_of
from cuvil_kernels_npu_sim.program import Program, Region

_ALIGN = 64


class Builder:
    def __init__(self, name: str, config: NpuConfig) -> None:
        self.name, self.cfg = name, config
        self.insns: list[Insn] = []
        self.uops: list[tuple[int, int, int]] = []
        self._uop_cache: dict[tuple[tuple[int, int, int], ...], int] = {}
        self._regs: dict[str, int] = {}
        self.regions: dict[str, Region] = {}
        self._consts: list[tuple[int, bytes]] = []
        self._top = 0

    def region(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: str,
        kind: str,
        layout: str = "plain",
        data: np.ndarray | None = None,
    ) -> Region:
        region = Region(name, self._top, tuple(int(s) for s in shape), dtype, kind, layout)
        self._top += -(-region.nbytes // _ALIGN) * _ALIGN
        self.regions[name] = region
        if data is not None:
            raw = np.ascontiguousarray(data, dtype=dtype).view(np.uint8).reshape(-1)
            assert raw.size == region.nbytes, (name, raw.size, region.nbytes)
            self._consts.append((region.offset, raw.tobytes()))
        return region

    def uop_block(self, entries: list[tuple[int, int, int]]) -> int:
        key = tuple(entries)
        if key not in self._uop_cache:
            if len(self.uops) + len(key) > self.cfg.uop_entries:
                raise ValueError(f"{self.name}: needs more than {self.cfg.uop_entries} micro-ops")
            self._uop_cache[key] = len(self.uops)
            self.uops.extend(key)
        return self._uop_cache[key]

    def set(self, **regs: int) -> None:
        for name, value in regs.items():
            if self._regs.get(name) != value:
                self._regs[name] = int(value)
                self.emit(Op.SET, reg=REGISTERS[name][0], value=int(value))

    def emit(self, op: Op, **args: int) -> int:
        self.insns.append(make(op, **args))
        return len(self.insns) - 1

    def flag(self, index: int, name: str) -> None:
        insn = self.insns[index]
        self.insns[index] = Insn(
            insn.op,
            insn.args,
            **{
                f: getattr(insn, f) or f == name
                for f in ("pop_prev", "pop_next", "push_prev", "push_next")
            },
        )

    def build(
        self,
        macs: int,
        info: dict[str, object] | None = None,
        touched: dict[str, int] | None = None,
    ) -> Program:
        uop_data = np.asarray(self.uops or [(0, 0, 0)], np.int32)
        uop_region = self.region("uops", uop_data.shape, "int32", "const", data=uop_data)
        head: list[Insn] = []
        for first in range(0, len(self.uops), 1023):
            count = min(1023, len(self.uops) - first)
            head += [
                make(Op.SET, reg=REGISTERS["ld_ystride"][0], value=12 * count),
                make(Op.SET, reg=REGISTERS["ld_xstride"][0], value=12),
                make(
                    Op.LOAD,
                    mem=Mem.UOP,
                    dtype=DType.I32,
                    sram=3 * first,
                    dram=uop_region.offset + 12 * first,
                    y=1,
                    x=count,
                    c=3,
                ),
            ]
        image = np.zeros(max(self._top, _ALIGN), np.uint8)
        for offset, raw in self._consts:
            image[offset : offset + len(raw)] = np.frombuffer(raw, np.uint8)
        return Program(
            self.name,
            self.cfg,
            tuple(head + self.insns),
            dict(self.regions),
            image,
            int(macs),
            dict(info or {}),
            dict(touched or {}),
        )


class Pipeline:
    """Attach the double-buffering tokens to the instructions each `with` block emits."""

    def __init__(self, builder: Builder, n_steps: int, n_tiles: int) -> None:
        self.b, self.n_steps, self.n_tiles = builder, n_steps, n_tiles

    @contextlib.contextmanager
    def _block(self, queue: Queue) -> Iterator[list[int]]:
        start = len(self.b.insns)
        indices: list[int] = []
        yield indices
        indices.extend(range(start, len(self.b.insns)))
        if not indices:
            indices.append(self.b.emit(Op.NOP, queue=queue))
        wrong = [i for i in indices if queue_of(self.b.insns[i]) is not queue]
        assert not wrong, f"{self.b.name}: {queue.name} block emitted {self.b.insns[wrong[0]]}"

    @contextlib.contextmanager
    def load(self, k: int) -> Iterator[None]:
        with self._block(Queue.LOAD) as idx:
            yield
        if k >= 2:
            self.b.flag(idx[0], "pop_next")
        self.b.flag(idx[-1], "push_next")

    @contextlib.contextmanager
    def compute(self, k: int, tile: int, tile_begin: bool, tile_end: bool) -> Iterator[None]:
        with self._block(Queue.COMPUTE) as idx:
            yield
        self.b.flag(idx[0], "pop_prev")
        if tile_begin and tile >= 2:
            self.b.flag(idx[0], "pop_next")
        if k + 2 < self.n_steps:
            self.b.flag(idx[-1], "push_prev")
        if tile_end:
            self.b.flag(idx[-1], "push_next")

    @contextlib.contextmanager
    def store(self, tile: int) -> Iterator[None]:
        with self._block(Queue.STORE) as idx:
            yield
        self.b.flag(idx[0], "pop_prev")
        if tile + 2 < self.n_tiles or tile == self.n_tiles - 1:
            self.b.flag(idx[-1], "push_prev")

    def finish(self) -> None:
        self.b.flag(self.b.emit(Op.FINISH), "pop_next")
