"""Race detection between the load, compute and store queues with vector clocks.

Each queue counts its own instructions; a pushed token carries the pusher's clock and a pop merges
it, so `clock[q][p]` is how many of queue p's instructions are ordered before queue q's current
one. Every scratchpad element remembers, per queue, the local time of its last read and write. An
access by q conflicts with an earlier access by p != q (write/write, write/read, read/write) that q
is not ordered after. The check depends only on the tokens, not on the interleaving that ran, so a
missing token is caught even when the run happened to produce the right numbers.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_npu_sim.errors import HazardError
from cuvil_kernels_npu_sim.isa import Mem, Queue
from cuvil_kernels_npu_sim.machine import Access

N_QUEUES = len(Queue)


class HazardChecker:
    def __init__(self, mem_sizes: dict[Mem, int]) -> None:
        self.clock = np.zeros((N_QUEUES, N_QUEUES), np.int64)
        self.last_write = {m: np.zeros((N_QUEUES, n), np.int64) for m, n in mem_sizes.items()}
        self.last_read = {m: np.zeros((N_QUEUES, n), np.int64) for m, n in mem_sizes.items()}

    def begin(self, queue: Queue) -> None:
        self.clock[queue, queue] += 1

    def merge(self, queue: Queue, token_clock: np.ndarray) -> None:
        np.maximum(self.clock[queue], token_clock, out=self.clock[queue])

    def snapshot(self, queue: Queue) -> np.ndarray:
        return self.clock[queue].copy()

    def access(self, queue: Queue, accesses: list[Access], where: str) -> None:
        now = self.clock[queue, queue]
        for mem, lo, hi, write in accesses:
            if mem not in self.last_write:
                continue
            for other in Queue:
                if other is queue:
                    continue
                seen = self.clock[queue, other]
                last_w = int(self.last_write[mem][other, lo:hi].max())
                last_r = int(self.last_read[mem][other, lo:hi].max()) if write else 0
                if last_w > seen or last_r > seen:
                    kind = "written" if last_w > seen else "read"
                    raise HazardError(
                        f"{where}: {'writes' if write else 'reads'} {mem.name}[{lo}:{hi}] "
                        f"{kind} by the {other.name} queue's instruction #{max(last_w, last_r)} "
                        f"with no dependence token ordering them; add a push/pop between the "
                        f"{queue.name} and {other.name} queues"
                    )
            table = self.last_write if write else self.last_read
            table[mem][queue, lo:hi] = now
