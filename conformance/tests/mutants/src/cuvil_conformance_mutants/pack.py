"""A mutant kernel pack: the reference semantics everywhere, except a vendor-style kernel for
the ops it claims, with one planted bug.

Each :class:`MutantPack` is a real pack: it is installed through the ``cuvil.kernelpacks``
entry-point group (see ``pyproject.toml``), provides one target ``mutant-<name>``, answers the
capability hook for the ops it claims only, and lowers partitions to an executable that runs its
own kernel for the claimed ops. With ``bug=None`` the same kernel is the *control*: a correct,
independently written implementation that must pass the whole suite, which shows that each
mutant fails because of its planted bug and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.interpreter import run_node
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin import Availability, Executable, Support, TargetInfo, TargetSpec, hookimpl

#: ``kernel(node, arrays, bug) -> outputs``; ``bug`` None is the correct kernel.
Kernel = Callable[[Node, list[np.ndarray], str | None], list[np.ndarray]]


@dataclass(frozen=True)
class Mutant:
    """One planted bug: the op(s) its kernel replaces, the bug's switch and what it models."""

    name: str
    ops: tuple[str, ...]
    kernel: Kernel
    bug: str | None
    doc: str
    rule: str  # the documented rule it breaks, as the suite's case rules name them

    @property
    def target(self) -> str:
        return f"mutant-{self.name}"


class MutantExecutable(Executable):
    def __init__(self, graph: Graph, mutant: Mutant) -> None:
        self.graph, self.mutant = graph, mutant

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env: dict[str, Any] = dict(self.graph.constants)
        env.update({v.name: a for v, a in zip(self.graph.inputs, inputs)})
        for node in self.graph.nodes:
            args = [env[v.name] for v in node.inputs]
            if node.op in self.mutant.ops:
                outs = self.mutant.kernel(node, args, self.mutant.bug)
            else:
                outs = list(run_node(node, args, {}))
            env.update({v.name: o for v, o in zip(node.outputs, outs)})
        return [env[v.name] for v in self.graph.outputs]


class MutantPack:
    """The pluggy plugin object of one mutant (an entry point's value)."""

    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant

    @hookimpl
    def cuvil_plugin_api_version(self) -> str:
        return "1.0"

    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        m = self.mutant
        kind = "control (no bug)" if m.bug is None else f"planted bug: {m.doc}"
        return [TargetInfo(m.target, f"[conformance test pack] {', '.join(m.ops)}: {kind}")]

    @hookimpl
    def cuvil_target_available(self, target: TargetSpec) -> Availability | None:
        if target.name != self.mutant.target:
            return None
        return Availability(True, device="numpy (conformance mutant)")

    @hookimpl
    def cuvil_supports_node(self, target: TargetSpec, node: Node, graph: Graph) -> Support | None:
        if target.name != self.mutant.target:
            return None
        if node.op in self.mutant.ops:
            return Support.yes()
        return Support.no(f"{self.mutant.target} claims only {', '.join(self.mutant.ops)}")

    @hookimpl
    def cuvil_lower_partition(
        self, target: TargetSpec, graph: Graph, options: dict[str, Any]
    ) -> Executable | None:
        if target.name != self.mutant.target:
            return None
        return MutantExecutable(graph, self.mutant)
