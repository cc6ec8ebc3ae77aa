"""A lowered partition: its nodes' kernels, run in order in one arena laid out by the memory plan.

The core plans memory for each partition (``request.memory_plan``): every intermediate and
output has an offset in one arena, buffers are reused once their value is dead, pointwise ops
may write over their dying input and views share their input's bytes. The executable takes the
plan as given: it allocates the arena once and gives each node output the typed view at its
offset. A device pack does the same with one device allocation.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_kernels_example.lowering import LOWERINGS
from cuvil_ref.interpreter import check_input
from cuvil_ref.ir.graph import Graph, Value
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin import Executable


class ExampleExecutable(Executable):
    """See the module docstring."""

    def __init__(self, graph: Graph, plan: MemoryPlan) -> None:
        self.graph = graph
        self.arena = np.zeros(plan.arena_bytes, np.uint8)
        self.slots = {v.name: self._slot(v, plan) for n in graph.nodes for v in n.outputs}
        self.steps = [(node, LOWERINGS[node.op].lower) for node in graph.nodes]
        self.calls = 0
        self._lock = threading.Lock()  # the arena is shared by every run

    def _slot(self, value: Value, plan: MemoryPlan) -> np.ndarray:
        buf = plan.buffers[value.name]
        shape = tuple(int(d) for d in value.type.shape)
        raw = self.arena[buf.offset : buf.offset + buf.nbytes]
        return raw.view(value.type.dtype.numpy).reshape(shape)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        bindings: dict[str, int] = {}
        env: dict[str, Any] = dict(self.graph.constants)
        for v, a in zip(self.graph.inputs, inputs, strict=True):
            env[v.name] = check_input(v.name, v.type, a, bindings)
        with self._lock:
            for node, kernel in self.steps:
                out = self.slots[node.outputs[0].name]
                kernel(node, [env[v.name] for v in node.inputs], out)
                env[node.outputs[0].name] = out
            self.calls += 1
            # outputs leave the arena: the next run reuses it
            return [np.array(env[v.name]) for v in self.graph.outputs]

    def metrics(self) -> dict[str, Any]:
        return {"calls": self.calls, "arena_bytes": int(self.arena.nbytes)}
