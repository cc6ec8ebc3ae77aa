"""In-process kernel packs for the plugin tests: a working one, broken ones, an old one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin import (
    Availability,
    Executable,
    OptionSpec,
    Support,
    TargetInfo,
    TargetSpec,
    hookimpl,
)


class ReluExecutable(Executable):
    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env = {v.name: a for v, a in zip(self.graph.inputs, inputs)}
        env.update(self.graph.constants)
        for n in self.graph.nodes:
            env[n.outputs[0].name] = np.maximum(env[n.inputs[0].name], np.float32(0))
        return [env[v.name] for v in self.graph.outputs]


class ToyPack:
    """Target 'toy': runs relu only; option loop_unroll_factor in 1..8."""

    @hookimpl
    def cuvil_plugin_api_version(self) -> str:
        return "1.0"

    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return [
            TargetInfo(
                "toy",
                "relu-only toy target",
                aliases=("vendor/toy",),
                arch="toyarch",
                options=(OptionSpec("loop_unroll_factor", int, 1, "unroll", minimum=1, maximum=8),),
            )
        ]

    @hookimpl
    def cuvil_target_available(self, target: TargetSpec) -> Availability | None:
        return Availability(True, device="toy device") if target.name == "toy" else None

    @hookimpl
    def cuvil_supports_node(self, target: TargetSpec, node: Node, graph: Graph) -> Support | None:
        if target.name != "toy":
            return None
        return (
            Support.yes() if node.op == "relu" else Support.no(f"toy runs relu only, not {node.op}")
        )

    @hookimpl
    def cuvil_lower_partition(
        self, target: TargetSpec, graph: Graph, options: dict[str, Any]
    ) -> Executable | None:
        return ReluExecutable(graph) if target.name == "toy" else None


class BrokenTargetsPack:
    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        raise RuntimeError("driver library missing")


class FuturePack:
    @hookimpl
    def cuvil_plugin_api_version(self) -> str:
        return "2.0"

    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return [TargetInfo("future", "from the future")]


class UnavailablePack:
    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return [TargetInfo("gpu-x", "needs a GPU")]

    @hookimpl
    def cuvil_target_available(self, target: TargetSpec) -> Availability | None:
        return Availability(False, "no GPU found (cudaGetDeviceCount returned 0)")
