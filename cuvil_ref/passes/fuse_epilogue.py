"""Epilogue fusion: conv2d / linear / matmul + bias + activation + residual add -> one fused op.

Requires: a verified graph. Ensures: every ``conv2d``, ``linear`` or ``matmul`` whose single-use
output feeds an add of a per-output-channel constant (the bias), a supported activation (relu,
relu6, gelu (both forms), silu, hardswish, clamp) or a same-typed add (the residual) has become
a ``fused_conv2d`` / ``fused_linear`` / ``fused_matmul`` (see ``cuvil_ref.ops.fused``) that does
all of it. The rules absorb one op at a time, so any prefix of the chain fuses, and the epilogue
order is recorded: an add seen before the activation gives ``order='residual_then_activation'``
(ResNet's ``relu(bn(conv(x)) + identity)``), after it ``'activation_then_residual'``.

A bias constant folded into the op's bias moves results within f32 rounding; everything else is
the same computation in the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ops import families
from cuvil_ref.ops.fused import ACTIVATIONS
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.rewrite import Match, Op, Rewriter, Rule, Var, apply_rules

#: producer -> its fused form (one of ``families.FUSED_PRODUCERS``).
FUSED = {op: f"fused_{op}" for op in sorted(families.GEMMS | families.CONVS)}
PRODUCERS = frozenset(FUSED) | frozenset(FUSED.values())

#: Ops an epilogue can absorb: those the fused ops' ``activation`` attribute spells.
ACTIVATION_OPS = frozenset(spelled[0] for spelled in ACTIVATIONS.values() if spelled)


def _epilogue_activation(act: Node) -> dict[str, Any] | None:
    """The fused op's activation attrs that compute ``act`` (None: no epilogue spells it)."""
    for name, spelled in ACTIVATIONS.items():
        if spelled is None or spelled[0] != act.op:
            continue
        if all(act.attrs.get(key) == value for key, value in spelled[1].items()):
            if act.op != "clamp":
                return {"activation": name}
            return {
                "activation": name,
                "activation_min": act.attrs["min"],
                "activation_max": act.attrs["max"],
            }
    return None


def _parts(m: Match, node: Node) -> tuple[str, list[Value], dict[str, Any], np.ndarray | None]:
    """(fused op name, [x, weight], attrs, current bias array or None) of a producer node."""
    if node.op in FUSED.values():
        attrs = dict(node.attrs)
        return node.op, list(node.inputs[:2]), attrs, m.constants.get(node.inputs[2].name)
    bias = None
    if len(node.inputs) > 2:
        bias = m.constants.get(node.inputs[2].name)
        if bias is None:
            return "", [], {}, None  # a computed bias: leave the node alone
    return FUSED[node.op], list(node.inputs[:2]), dict(node.attrs), bias


def _zero_bias(node: Node) -> np.ndarray:
    out = node.outputs[0].type
    if node.op in ("conv2d", "fused_conv2d"):
        channels = node.inputs[1].type.shape[0]
    else:
        channels = out.shape[-1]
    return np.zeros((int(channels),), dtype=out.dtype.numpy)


def bias_name(weight: Value) -> str:
    """``conv.weight`` -> ``conv.bias``; any other name gets ``_bias`` appended."""
    name = weight.name
    return name[: -len("weight")] + "bias" if name.endswith("weight") else name + "_bias"


def _rebuild(
    m: Match,
    r: Rewriter,
    node: Node,
    bias: np.ndarray | Value,
    residual: Value | None,
    **changes: Any,
) -> Value | None:
    op, xw, attrs, _ = _parts(m, node)
    if not op:
        return None
    attrs.update(changes)
    if not isinstance(bias, Value):
        bias = r.constant(bias_name(node.inputs[1]), bias)
    inputs = [*xw, bias]
    if node.op in FUSED.values() and node.attrs["has_residual"]:
        residual = node.inputs[3]
    if residual is not None:
        inputs.append(residual)
        attrs["has_residual"] = True
    return r.op(op, inputs, attrs, layout=m.root.outputs[0].type.layout)


def _current_bias(m: Match, node: Node) -> np.ndarray | None:
    if node.op == "matmul" and min(v.type.rank for v in node.inputs) < 2:
        return None  # a vector operand removes the dim a bias would run along
    _, _, _, bias = _parts(m, node)
    if bias is None and not (node.op in FUSED and len(node.inputs) == 2):
        return None
    return _zero_bias(node) if bias is None else np.asarray(bias)


def _bias_input(m: Match, node: Node) -> np.ndarray | Value | None:
    """The producer's bias as its existing constant Value, or a zero array when it has none."""
    bias = _current_bias(m, node)
    if bias is None:
        return None
    return node.inputs[2] if len(node.inputs) > 2 else bias


def _channel_vector(c: np.ndarray, m: Match, node: Node) -> np.ndarray | None:
    """The add's constant ``c`` as a per-output-channel vector, or None if it is not one."""
    out = node.outputs[0].type
    if m.root.outputs[0].type != out or c.dtype != out.dtype.numpy:
        return None
    if node.op in ("conv2d", "fused_conv2d"):
        channel_axis = 1 if node.attrs.get("data_layout", "NCHW") == "NCHW" else 3
        axis_from_end = out.rank - channel_axis
    else:
        axis_from_end = 1
    if c.ndim < axis_from_end or any(
        d != 1 for i, d in enumerate(c.shape) if c.ndim - i != axis_from_end
    ):
        return None
    return c.reshape(-1) if c.ndim else None


def _no_epilogue(n: Node) -> bool:
    return n.op in FUSED or (n.attrs["activation"] == "none" and not n.attrs["has_residual"])


def _bias(m: Match, r: Rewriter) -> Value | None:
    node = m.node("prod")
    vec, bias = _channel_vector(m.array("c"), m, node), _current_bias(m, node)
    if vec is None or bias is None or vec.shape != bias.shape:
        return None
    return _rebuild(m, r, node, (bias + vec).astype(bias.dtype), None)


def _activation(m: Match, r: Rewriter) -> Value | None:
    node, act = m.node("prod"), m.root
    bias = _bias_input(m, node)
    attrs = _epilogue_activation(act)
    if bias is None or attrs is None:
        return None
    return _rebuild(m, r, node, bias, None, **attrs)


def _residual(m: Match, r: Rewriter) -> Value | None:
    node = m.node("prod")
    bias, y = _bias_input(m, node), m["y"]
    if bias is None or y.type != m.root.outputs[0].type or y.type != node.outputs[0].type:
        return None
    if m.is_const(y) and _channel_vector(m.constants[y.name], m, node) is not None:
        return None  # that is a bias
    activated = node.op in FUSED.values() and node.attrs["activation"] != "none"
    order = "activation_then_residual" if activated else "residual_then_activation"
    return _rebuild(m, r, node, bias, y, order=order)


def _no_activation(n: Node) -> bool:
    return n.op in FUSED or n.attrs["activation"] == "none"


def _no_residual(n: Node) -> bool:
    return n.op in FUSED or not n.attrs["has_residual"]


RULES: tuple[Rule, ...] = (
    Rule(
        "bias",
        Op(
            "add",
            Op(PRODUCERS, name="prod", one_use=True, exact=False, where=_no_epilogue),
            Var("c", const=True),
            commutative=True,
        ),
        _bias,
    ),
    Rule(
        "activation",
        Op(
            ACTIVATION_OPS,
            Op(PRODUCERS, name="prod", one_use=True, exact=False, where=_no_activation),
        ),
        _activation,
    ),
    Rule(
        "residual",
        Op(
            "add",
            Op(PRODUCERS, name="prod", one_use=True, exact=False, where=_no_residual),
            Var("y"),
            commutative=True,
        ),
        _residual,
    ),
)


def fuse_epilogue(graph: Graph) -> PassResult:
    return apply_rules(graph, RULES)
