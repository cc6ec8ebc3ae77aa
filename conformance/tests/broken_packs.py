"""Deliberately broken packs: each runs the reference semantics except for one planted bug.

The suite must report every one of them as failing, naming the op and the case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.interpreter import run_node
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import REGISTRY
from cuvil_ref.plugin import Availability, Executable, Support, TargetInfo, TargetSpec, hookimpl

Override = Callable[[Node, list[np.ndarray]], list[np.ndarray]]


class PatchedExecutable(Executable):
    def __init__(self, graph: Graph, overrides: dict[str, Override]) -> None:
        self.graph, self.overrides = graph, overrides

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env: dict[str, Any] = dict(self.graph.constants)
        env.update({v.name: a for v, a in zip(self.graph.inputs, inputs)})
        for node in self.graph.nodes:
            args = [env[v.name] for v in node.inputs]
            if node.op in self.overrides:
                outs = self.overrides[node.op](node, args)
            else:
                outs = list(run_node(node, args, {}))
            env.update({v.name: o for v, o in zip(node.outputs, outs)})
        return [env[v.name] for v in self.graph.outputs]


class BrokenPack:
    """A pack for target ``name`` that claims ``claims`` (default: all ops) with overrides."""

    def __init__(
        self, name: str, overrides: dict[str, Override], claims: Sequence[str] | None = None
    ) -> None:
        self.name, self.overrides = name, overrides
        self.claims = set(claims) if claims is not None else None

    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return [TargetInfo(self.name, f"broken pack {self.name}")]

    @hookimpl
    def cuvil_target_available(self, target: TargetSpec) -> Availability | None:
        return Availability(True, device="numpy") if target.name == self.name else None

    @hookimpl
    def cuvil_supports_node(self, target: TargetSpec, node: Node, graph: Graph) -> Support | None:
        if target.name != self.name:
            return None
        ok = node.op in REGISTRY and (self.claims is None or node.op in self.claims)
        return Support.yes() if ok else Support.no(f"{self.name} does not claim {node.op}")

    @hookimpl
    def cuvil_lower_partition(
        self, target: TargetSpec, graph: Graph, options: dict[str, Any]
    ) -> Executable | None:
        return PatchedExecutable(graph, self.overrides) if target.name == self.name else None


def _ref(node: Node, args: list[np.ndarray], **attr_changes: Any) -> list[np.ndarray]:
    # the planted bug computes with other attrs than the node declares: evaluate the semantics
    # directly (the interpreter would refuse a result of another shape)
    return list(REGISTRY.get(node.op).evaluate(args, {**node.attrs, **attr_changes}))


def ties_away_from_zero(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """quantize that rounds halves away from zero instead of to even."""
    (x,) = args
    a = node.attrs
    scale = np.float32(a["scale"][0] if isinstance(a["scale"], tuple) else a["scale"])
    zp = a["zero_point"][0] if isinstance(a["zero_point"], tuple) else a["zero_point"]
    with np.errstate(all="ignore"):
        t = x.astype(np.float32) / scale
        r = np.sign(t) * np.floor(np.abs(t) + 0.5)
        r = np.where(np.isnan(r), 0, r)
        q = np.clip(r + zp, -128, 127)
    return [q.astype(np.int8)]


def padding_off_by_one(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """conv2d that pads one more row on top and one less at the bottom."""
    t, left, b, r = node.attrs["padding"]
    if b == 0:
        return _ref(node, args)
    return _ref(node, args, padding=(t + 1, left, b - 1, r))


def ignored_stride(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """max_pool2d that always uses stride 1 but crops to the expected shape."""
    out = _ref(node, args, stride=(1, 1))[0]
    want = tuple(node.outputs[0].type.shape)
    return [np.ascontiguousarray(out[tuple(slice(0, d) for d in want)])]


def nan_to_zero(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """relu that turns NaN into 0 (np.maximum(nan_to_num(x), 0))."""
    return [np.maximum(np.nan_to_num(args[0], nan=0.0), 0).astype(args[0].dtype)]


def returns_input(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """A claimed op that silently returns its input."""
    return [args[0]]


BROKEN: dict[str, tuple[str, Override]] = {
    "broken-ties": ("quantize", ties_away_from_zero),
    "broken-padding": ("conv2d", padding_off_by_one),
    "broken-stride": ("max_pool2d", ignored_stride),
    "broken-nan": ("relu", nan_to_zero),
    "broken-identity": ("tanh", returns_input),
}
