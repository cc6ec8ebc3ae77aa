"""The built-in ``ref`` target: runs any partition with the reference interpreter.

It is registered through the ``cuvil.kernelpacks`` entry point like any other pack, supports every
registered op, and is what partitioning falls back to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import REGISTRY
from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION, hookimpl
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import (
    Availability,
    Executable,
    Support,
    TargetInfo,
    TargetPreferences,
)

NAME = "ref"


class RefExecutable(Executable):
    """Interprets its partition graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.calls = 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self.calls += 1
        return interpret(self.graph, list(inputs))

    def metrics(self) -> dict[str, Any]:
        return {"calls": self.calls, "nodes": len(self.graph.nodes)}


@hookimpl
def cuvil_plugin_api_version() -> str:
    return PLUGIN_API_VERSION


@hookimpl
def cuvil_targets() -> list[TargetInfo]:
    return [
        TargetInfo(
            name=NAME,
            description="reference numpy interpreter (the oracle); runs every op",
            aliases=("numpy", "reference"),
            arch="cpu",
        )
    ]


@hookimpl
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    if target.name != NAME:
        return None
    return Availability(True, "", f"numpy {np.__version__} (CPU)")


@hookimpl
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    if target.name != NAME:
        return None
    return TargetPreferences()


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if target.name != NAME:
        return None
    if node.op in REGISTRY:
        return Support.yes()
    return Support.no(f"op '{node.op}' is not in the registry")


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if target.name != NAME:
        return None
    return RefExecutable(graph)
