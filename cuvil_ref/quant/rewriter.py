"""The forward walk of the int8 rewrite: value versions, the rule hooks, float fallback.

:class:`Rewriter` keeps, for every original value, its float version, its int8 version
(:class:`QValue`: value, scale, zero point) or both, and emits a ``quantize``/``dequantize`` the
first time a missing version is needed. Each node goes to its :data:`Rule` (the op's integer
form, :mod:`cuvil_ref.quant.ptq`), or stays float with the reason in the report when the rule
raises :class:`Fallback`. QAT import (:mod:`cuvil_ref.quant.qdq`) and the control-flow rules
subclass it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ops import families, qarith
from cuvil_ref.quant.observers import PerChannelMinMaxObserver
from cuvil_ref.quant.report import layer_entry

#: Activations a producer absorbs into its int8 clamp bounds.
ACTIVATIONS = families.RELUS


class Fallback(Exception):  # noqa: N818  (control flow, never escapes this module)
    """Raised by a rule to keep its node in float; the message is the report's reason."""


Rule = Callable[["Rewriter", Node], dict[str, Any]]
"""A rewrite rule: emits the integer form of a node and returns its report entry, or raises
:class:`Fallback` (or ``QuantizationError``) to keep the node in float."""


@dataclass(frozen=True)
class QWeight:
    """A weight quantized for an accumulating op: symmetric int8 values (axis 0 = output
    channels), the float32 scale of each output channel, and the report's scheme and extras."""

    values: np.ndarray
    scales: np.ndarray
    scheme: str
    info: Mapping[str, Any]


@dataclass(frozen=True)
class QValue:
    """The int8 version of an original value: the new IR value and its scale and zero point."""

    value: Value
    scale: np.float32
    zp: int


class Rewriter:
    """One forward walk over ``graph`` building the quantized graph and its per-node report.

    Subclasses adapt it through ``rules`` (op name -> :data:`Rule`, default
    :data:`cuvil_ref.quant.ptq.RULES`) and the hooks :meth:`rule_for`, :meth:`finish` and
    :meth:`quantize_weight`.
    """

    def __init__(
        self,
        graph: Graph,
        qparams: Mapping[str, tuple[np.float32, int]],
        *,
        per_channel: bool = True,
        skip: Collection[str] = (),
        skip_nodes: Collection[str] = (),
        rules: Mapping[str, Rule] | None = None,
    ) -> None:
        self.graph, self.qparams = graph, qparams
        if rules is None:
            from cuvil_ref.quant.ptq import RULES as rules  # the rules use this class
        self.rules: Mapping[str, Rule] = rules
        self.per_channel, self.skip = per_channel, set(skip)
        # node names only: a node named like an op ('conv2d') must not skip every conv
        self.skip_nodes = set(skip_nodes)
        self.b = GraphBuilder()
        self.floats: dict[str, Value] = {}
        self.ints: dict[str, QValue] = {}
        self.users = graph.users()
        self.outputs = {v.name for v in graph.outputs}
        self.fused: dict[int, str] = {}  # id(activation node) -> name of the node it joined
        self.layers: list[dict[str, Any]] = []

    # --- value versions --------------------------------------------------------------------------

    def as_float(self, v: Value) -> Value:
        if v.name in self.floats:
            return self.floats[v.name]
        if v.name in self.graph.constants:
            fv = self.b.constant(v.name, self.graph.constants[v.name])
            self.floats[v.name] = fv
            return fv
        q = self.ints[v.name]
        fv = self.b.op("dequantize", [q.value], boundary(q), name=f"{v.name}_dq")
        self.floats[v.name] = fv
        return fv

    def as_int8(self, v: Value) -> QValue:
        if v.name in self.ints:
            return self.ints[v.name]
        if v.name in self.graph.constants:
            raise Fallback(f"operand %{v.name} is a constant, not a calibrated activation")
        if v.type.dtype != DType.f32 or v.name not in self.qparams:
            raise Fallback(f"operand %{v.name} ({v.type}) has no calibrated f32 range")
        scale, zp = self.qparams[v.name]
        fv = self.as_float(v)
        attrs = {"scale": (float(scale),), "zero_point": (int(zp),)}
        q = QValue(self.b.op("quantize", [fv], attrs, name=f"{v.name}_q"), np.float32(scale), zp)
        self.ints[v.name] = q
        return q

    def const(self, hint: str, array: np.ndarray) -> Value:
        return self.b.constant(hint, array)

    def out_params(self, name: str) -> tuple[np.float32, int]:
        if name not in self.qparams:
            raise Fallback(f"output %{name} has no calibrated range")
        scale, zp = self.qparams[name]
        return np.float32(scale), int(zp)

    def fusable_activation(self, node: Node) -> Node | None:
        """The relu/relu6 that is the only reader of ``node``'s output, if any."""
        out = node.outputs[0].name
        readers = self.users.get(out, [])
        if out in self.outputs or len(readers) != 1 or readers[0].op not in ACTIVATIONS:
            return None
        name = readers[0].outputs[0].name
        return readers[0] if name not in self.skip and name not in self.skip_nodes else None

    def emit(
        self,
        node: Node,
        op: str,
        inputs: list[Value],
        attrs: dict[str, Any],
        out: tuple[np.float32, int],
        final: str,
    ) -> QValue:
        """Append an integer op whose output is the int8 version of original value ``final``."""
        attrs = {**attrs, "out_scale": float(out[0]), "out_zp": out[1]}
        v = self.b.op(op, inputs, attrs, name=final, provenance=node.provenance)
        q = QValue(v, out[0], out[1])
        self.ints[final] = q
        return q

    def quantize_weight(self, name: str, w: np.ndarray) -> QWeight:
        """Hook: the int8 form of float weight constant ``name`` (values ``w``, output channels
        on axis 0). PTQ derives symmetric scales from ``w``, per channel or per tensor."""
        values, scales = symmetric_weight(w, self.per_channel)
        scheme = "int8 per-channel" if self.per_channel else "int8 per-tensor"
        return QWeight(values, scales, scheme, {})

    # --- the walk --------------------------------------------------------------------------------

    def rule_for(self, node: Node) -> Rule | None:
        """Hook: the rule that rewrites ``node`` (``None``: no int8 form)."""
        return self.rules.get(node.op)

    def finish(self, node: Node) -> None:
        """Hook: called after a rule rewrote ``node``; nothing to do in PTQ."""

    def run(self) -> Graph:
        for v in self.graph.inputs:
            self.floats[v.name] = self.b.add_input(v)
        for node in self.graph.nodes:
            name = node.outputs[0].name
            if id(node) in self.fused:
                joined = f"fused into %{self.fused[id(node)]}"
                self.layers.append(layer_entry(node, "fused", joined))
                continue
            rule = self.rule_for(node)
            if name in self.skip or node.op in self.skip or name in self.skip_nodes:
                reason = "skipped by the caller (skip=...)"
            elif rule is None:
                reason = f"op '{node.op}' has no int8 form"
            else:
                try:
                    self.layers.append(rule(self, node))
                    self.finish(node)
                    continue
                except (Fallback, QuantizationError) as exc:  # e.g. an unrepresentable ratio
                    reason = str(exc)
            self.fallback(node, reason)
        return self.b.build([self.as_float(v) for v in self.graph.outputs])

    def fallback(self, node: Node, reason: str) -> None:
        inputs = [self.as_float(v) for v in node.inputs]
        outs = self.b.op_multi(
            node.op,
            inputs,
            node.attrs,
            name=node.outputs[0].name if len(node.outputs) == 1 else None,
            provenance=node.provenance,
            output_types=[v.type for v in node.outputs],
            regions=node.regions,
        )
        for old, new in zip(node.outputs, outs, strict=True):
            self.floats[old.name] = new
        self.layers.append(layer_entry(node, "float-fallback", reason))

    def fuse(self, node: Node, allowed: bool = True) -> tuple[str | None, str]:
        """(activation kind, name of the final original value) for ``node``."""
        act = self.fusable_activation(node) if allowed else None
        if act is None:
            return None, node.outputs[0].name
        return act.op, act.outputs[0].name

    def claim(self, node: Node, kind: str | None, final: str) -> None:
        if kind is not None:
            act = self.users[node.outputs[0].name][0]
            self.fused[id(act)] = node.outputs[0].name


def boundary(q: QValue) -> dict[str, Any]:
    return {"scale": (float(q.scale),), "zero_point": (q.zp,)}


def symmetric_weight(w: np.ndarray, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weight (axis 0 = output channels) and its float32 scale per channel."""
    if per_channel:
        obs = PerChannelMinMaxObserver(axis=0)
        obs.update(w)
        scales, _ = obs.qparams()
    else:
        amax = float(np.abs(w).max()) if w.size else 0.0
        s, _ = qarith.choose_qparams(-amax, amax, True, qarith.WEIGHT_QMIN, qarith.WEIGHT_QMAX)
        scales = np.full(w.shape[0], s, np.float32)
    qw = qarith.quantize(
        w, scales, np.zeros(len(scales), np.int64), qarith.WEIGHT_QMIN, qarith.WEIGHT_QMAX, axis=0
    )
    return qw, scales
