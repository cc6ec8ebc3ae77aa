"""Fold, at capture, every node of an exported graph that depends only on constants.

Causal masks built from ``arange``, rotary ``cos``/``sin`` tables, relative-position indices and
ALiBi slopes depend on weights, literals and static sizes only. :class:`CaptureFolder` keeps the
concrete torch value of every such node -- computed by torch itself, so the folded result has
torch's exact semantics, whatever ops it took -- and turns a value into an IR constant only when a
node that is *not* folded reads it. What was folded is recorded for the compile report
(``summary()``).

Not folded: nondeterministic ops (``rand``...), quantization ops (the quantizer reads their
scales from the graph), in-place ops, and results above ``MAX_ELEMENTS`` (kept as computation).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from cuvil_ref.frontend.context import Converter

MAX_ELEMENTS = 1 << 24


def _name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is not None:
        overload = schema.overload_name
        return f"{schema.name}.{overload}" if overload else schema.name
    return getattr(target, "__name__", str(target))


def _foldable_target(target: Any) -> bool:
    tags = getattr(target, "tags", ())
    if torch.Tag.nondeterministic_seeded in tags:
        return False
    name = _name(target)
    base = name.split(".", 1)[0]
    return "quant" not in name and not base.endswith("_")


def _size(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (tuple, list)):
        return sum(_size(v) for v in value)
    return 0


class CaptureFolder:
    """Concrete values of the nodes that depend only on constants."""

    def __init__(self, cx: Converter) -> None:
        self.cx = cx
        self.values: dict[torch.fx.Node, Any] = {}
        self._weight_names: dict[torch.fx.Node, str] = {}
        self._materialized: dict[torch.fx.Node, Any] = {}
        self.folded: Counter[str] = Counter()
        self.constants: list[dict[str, Any]] = []

    def add_weight(self, node: torch.fx.Node, name: str, tensor: torch.Tensor) -> None:
        self.values[node] = tensor
        self._weight_names[node] = name

    def try_fold(self, node: torch.fx.Node) -> bool:
        """Compute ``node`` with torch if all its inputs are known; True if it was folded."""
        if node.op != "call_function" or not _foldable_target(node.target):
            return False
        deps = node.all_input_nodes
        if any(d not in self.values for d in deps):
            return False
        args = torch.fx.node.map_arg(node.args, lambda n: self.values[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: self.values[n])
        try:
            with torch.no_grad():
                value = node.target(*args, **kwargs)
        except Exception:
            return False  # leave it to the converter, which gives the proper error
        if _size(value) > MAX_ELEMENTS:
            return False
        self.values[node] = value
        self.folded[_name(node.target)] += 1
        return True

    def known(self, node: torch.fx.Node) -> tuple[str, torch.Tensor] | None:
        """``(name, tensor)`` when ``node`` is a weight or a tensor computed at capture (a
        control-flow op passes it into its regions as a constant), else None."""
        value = self.values.get(node)
        if not isinstance(value, torch.Tensor):
            return None
        return self._weight_names.get(node, f"folded_{node.name}"), value

    def materialize(self, node: torch.fx.Node) -> Any:
        """The IR form of a known value: a (named) constant, a tuple of them, or a Python value."""
        if node not in self._materialized:
            value = self.values[node]
            self._materialized[node] = self._to_ir(node, value)
        return self._materialized[node]

    def _to_ir(self, node: torch.fx.Node, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if node in self._weight_names:
                return self.cx.weight(self._weight_names[node], value)
            const = self.cx.constant(value, f"folded_{node.name}")
            self.constants.append(
                {"name": const.name, "shape": list(value.shape), "from": node.name}
            )
            return const
        if isinstance(value, (tuple, list)):
            items = [self._to_ir(node, v) for v in value]
            return type(value)(items) if isinstance(value, tuple) else items
        return value

    def summary(self) -> dict[str, Any]:
        """What was folded: node count, ops, and the constants that replaced subgraphs."""
        return {
            "nodes": sum(self.folded.values()),
            "ops": dict(self.folded.most_common()),
            "constants": self.constants[:50],
        }
