"""The planning step: a partition graph -> kernel sources, launches and one arena layout.

Pure Python (no CuPy, no GPU), so it is tested on any machine and it is what the compile check
and ``gpu_bench.py --dry-run`` run. Arena layout: node outputs at the offsets of the compiler's
memory plan (``options["memory_plan"]``) when that plan fits this partition, else at offsets
planned for the partition alone; then every constant and every partition input, each aligned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_kernels_hip.lowering import LOWERINGS, support_reason
from cuvil_kernels_hip.lowerings.common import LowerContext, numel, static_shape
from cuvil_kernels_hip.runtime import ARENA_ALIGNMENT, BufferSpec, Launch, check_buffers
from cuvil_kernels_hip.source import KernelOptions, KernelSource
from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph, Value
from cuvil_ref.passes.memory_plan import MemoryPlan, plan_memory


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
    memory_source: str  # "compiler plan" or "partition plan"

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


def _plan_fits(plan: MemoryPlan | None, graph: Graph) -> bool:
    """Whether the compiler's whole-graph plan is valid for this partition's node order."""
    if plan is None or not graph.nodes:
        return False
    starts = []
    for node in graph.nodes:
        for v in node.outputs:
            b = plan.buffers.get(v.name)
            if b is None or b.nbytes != _spec(v, 0).nbytes or b.offset % ARENA_ALIGNMENT:
                return False
        starts.append(plan.buffers[node.outputs[0].name].start)
    if starts != sorted(starts):  # partitioning reordered nodes: lifetimes no longer hold
        return False
    return all(plan.buffers[v.name].end >= starts[-1] for v in graph.outputs)


def plan_partition(
    graph: Graph, options: dict[str, Any], features: tuple[str, ...] = ()
) -> KernelPlan:
    """Lower every node of ``graph`` and lay out the arena; raises TargetError naming the node."""
    try:
        kopts = KernelOptions.from_target(dict(options), features)
    except ValueError as exc:
        raise TargetError(f"target 'hip': {exc}") from None
    ctx = LowerContext(graph, kopts)
    for node in graph.nodes:
        reason = support_reason(node, graph)
        if reason is not None:
            raise TargetError(
                f"target 'hip' cannot lower %{node.outputs[0].name} = {node.op}: {reason}"
            )
        if numel(static_shape(node.outputs[0])) == 0:
            continue  # an empty output needs no launch
        try:
            LOWERINGS[node.op].lower(node, ctx)
        except (ValueError, KeyError) as exc:
            raise TargetError(
                f"target 'hip' failed to lower %{node.outputs[0].name} = {node.op}: {exc}"
            ) from exc
    given = options.get("memory_plan")
    fits = _plan_fits(given, graph)
    memory = given if fits else plan_memory(graph)
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
        memory_source="compiler plan" if fits else "partition plan",
    )
