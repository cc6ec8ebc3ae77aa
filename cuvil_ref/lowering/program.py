"""A compiled program: partitions lowered to executables, run in order on host arrays.

Values cross partition edges as numpy arrays; ``transfers`` counts the bytes that cross between
partitions of different targets (the transfers a device pack pays at its edges).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError, TargetError
from cuvil_ref.interpreter import check_input
from cuvil_ref.ir.graph import Module
from cuvil_ref.lowering.partition import Partition, PartitionPlan
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import Executable


@dataclass
class LoweredPartition:
    partition: Partition
    executable: Executable
    memory: MemoryPlan  # the plan the pack was given for this partition


@dataclass
class CompiledProgram:
    """The result of ``compile_module``: run it with numpy arrays."""

    module: Module
    target: TargetSpec
    plan: PartitionPlan
    lowered: list[LoweredPartition]
    report_data: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    transfer_bytes: int = 0

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        graph = self.module.graph
        if len(inputs) != len(graph.inputs):
            raise CuvilError(
                f"the compiled module takes {len(graph.inputs)} inputs, got {len(inputs)}"
            )
        bindings: dict[str, int] = {}
        env: dict[str, np.ndarray] = dict(graph.constants)
        for v, a in zip(graph.inputs, inputs, strict=True):
            env[v.name] = check_input(v.name, v.type, a, bindings)
        where: dict[str, str] = {v.name: "host" for v in graph.inputs}
        self.transfer_bytes += run_partitions(self.lowered, env, where)
        self.calls += 1
        return [np.asarray(env[v.name]) for v in graph.outputs]

    def run_async(self, inputs: Sequence[Any]) -> concurrent.futures.Future:
        """Run on a worker thread; partitions of device packs may run asynchronously inside."""
        return _POOL.submit(self.run, list(inputs))

    def report(self) -> dict[str, Any]:
        data = dict(self.report_data)
        data["target"] = self.target.name
        data["target_spec"] = self.target.to_json()
        data["partitions"] = self.plan.report()
        metrics: dict[str, Any] = {}
        for i, lp in enumerate(self.lowered):
            m = lp.executable.metrics()
            if m:
                metrics[f"partition{i}:{lp.partition.target}"] = m
        # The target's own metrics at top level when one partition ran on it (the usual case:
        # ref partitions at the edges only quantize/dequantize), per partition otherwise.
        on_target = [lp for lp in self.lowered if lp.partition.target == self.target.name]
        if len(on_target) == 1:
            metrics = {**on_target[0].executable.metrics(), "partitions": metrics}
        data["metrics"] = metrics
        data["runtime"] = {"calls": self.calls, "transfer_bytes": self.transfer_bytes}
        return data


def run_partitions(
    lowered: Sequence[LoweredPartition], env: dict[str, Any], where: dict[str, str]
) -> int:
    """Run ``lowered`` in order: each partition reads its inputs from ``env`` (value name ->
    array) and adds its outputs there; ``where`` records on which target each value lives.
    Returns the bytes that crossed from one target (or the host) to another."""
    moved = 0
    for lp in lowered:
        sub = lp.partition.graph
        args = [env[v.name] for v in sub.inputs]
        for v in sub.inputs:
            if where.get(v.name, "host") != lp.partition.target:
                moved += env[v.name].nbytes
        try:
            outs = lp.executable.run(args)
        except CuvilError:
            raise
        except Exception as exc:
            raise TargetError(
                f"partition on target '{lp.partition.target}' failed: {type(exc).__name__}: {exc}"
            ) from exc
        for v, o in zip(sub.outputs, outs, strict=True):
            env[v.name] = o
            where[v.name] = lp.partition.target
    return moved


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="cuvil-run")
