"""The planning step: a partition graph -> kernel sources, launches and one arena layout.

Pure Python (no CuPy, no GPU), so it is tested on any machine and it is what the compile check
and ``gpu_bench.py --dry-run`` run. Arena layout: node outputs at the offsets of the memory plan
the compiler made for this partition (used as given: views share their input's bytes, pointwise
ops may write over a dying input); then every constant and every partition input, each aligned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_kernels_hip.lowering import LOWERINGS
from cuvil_kernels_hip.lowerings.common import LowerContext, numel, static_shape
from cuvil_kernels_hip.runtime import ARENA_ALIGNMENT, BufferSpec, Launch, check_buffers
from cuvil_kernels_hip.source import KernelOptions, KernelSource
from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph, Value
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.kit import lowering_node


@dataclass(frozen=True)
class KernelPlan:
    """Everything a device needs to run one partition, decided before touching the device."""

    launches: tuple[Launch, ...]
    buffers: dict[str, BufferSpec]
    arena_bytes: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    constants: dict[str, np.ndarray]
    options: KernelOptions
    notes: tuple[str, ...]

    @property
    def sources(self) -> list[KernelSource]:
        """The distinct generated sources, in first-use order."""
        seen: dict[str, KernelSource] = {}
        for launch in self.launches:
            seen.setdefault(launch.source.sha256, launch.source)
        return list(seen.values())


def _align(n: int) -> int:
    return (n + ARENA_ALIGNMENT - 1) // ARENA_ALIGNMENT * ARENA_ALIGNMENT


def _spec(value: Value, offset: int) -> BufferSpec:
    return BufferSpec(offset, static_shape(value), value.type.dtype.numpy.name)


def plan_partition(
    graph: Graph, options: Mapping[str, Any], memory: MemoryPlan, features: tuple[str, ...] = ()
) -> KernelPlan:
    """Lower every (claimed) node of ``graph`` into launches and lay out the arena around
    ``memory``, the partition's plan; raises TargetError naming the node."""
    try:
        kopts = KernelOptions.from_target(dict(options), features)
    except ValueError as exc:
        raise TargetError(f"target 'hip': {exc}") from None
    ctx = LowerContext(graph, kopts, memory)
    for node in graph.nodes:
        if numel(static_shape(node.outputs[0])) == 0:
            continue  # an empty output needs no launch
        with lowering_node("hip", node):
            LOWERINGS[node.op].lower(node, ctx)
    buffers: dict[str, BufferSpec] = {}
    end = 0
    for node in graph.nodes:
        for v in node.outputs:
            spec = _spec(v, memory.buffers[v.name].offset)
            buffers[v.name] = spec
            end = max(end, _align(spec.offset + spec.nbytes))
    constants: dict[str, np.ndarray] = {}
    used = {v.name for n in graph.nodes for v in n.inputs}
    for name, array in graph.constants.items():
        if name in used:
            constants[name] = np.ascontiguousarray(array)
    constants.update(ctx.extra_constants)
    for name, array in constants.items():
        buffers[name] = BufferSpec(end, tuple(array.shape), array.dtype.name)
        end += _align(max(array.nbytes, 1))
    for v in graph.inputs:
        buffers[v.name] = _spec(v, end)
        end += _align(max(buffers[v.name].nbytes, 1))
    check_buffers(buffers, end)
    return KernelPlan(
        launches=tuple(ctx.launches),
        buffers=buffers,
        arena_bytes=end,
        inputs=tuple(v.name for v in graph.inputs),
        outputs=tuple(v.name for v in graph.outputs),
        constants=constants,
        options=kopts,
        notes=tuple(ctx.notes),
    )
