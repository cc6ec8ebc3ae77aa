"""Int8 rules for transformer graphs: integer softmax, LayerNorm and activation tables, int8
data movement, free rescaling by scalar constants, and constant operands of add/mul.

Added to the post-training rewriter's rule table (:data:`cuvil_ref.quant.ptq.RULES`) by
:func:`transformer_rules`; each rule emits the integer form of one float node or raises
:class:`~cuvil_ref.quant.ptq.Fallback` to keep it in float. The integer ops are declared in
:mod:`cuvil_ref.ops.qtransformer` and specified in ``docs/semantics.md`` §11. A user keeps any
of these ops in float with ``quant_options={"skip": ["softmax", ...]}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_ref.ir.types import QuantParams
from cuvil_ref.ops import REGISTRY, families, get_op, qarith
from cuvil_ref.ops.qtransformer import (
    SOFTMAX_SCALE,
    SOFTMAX_ZP,
    exp_table,
    layer_norm_params,
    lut_table,
)

if TYPE_CHECKING:
    from cuvil_ref.ir.graph import Node
    from cuvil_ref.quant.rewriter import QValue, Rewriter, Rule

#: Float activations that become one ``qlut`` (their int8 image is a 256-entry table).
LUT_ACTIVATIONS = families.NONLINEAR_ACTIVATIONS
#: Data-movement ops that run on int8 with the input's scale and zero point.
INT8_MOVES = families.REARRANGEMENTS


def _fallback(reason: str) -> Exception:
    from cuvil_ref.quant.rewriter import Fallback

    return Fallback(reason)


def _qvalue(value: Any, scale: float, zp: int) -> QValue:
    from cuvil_ref.quant.rewriter import QValue

    return QValue(value, np.float32(scale), int(zp))


def _entry(node: Node, scheme: str, qop: str | None, ins: list[QValue], out: QValue) -> dict:
    """A report entry shaped like the core rewriter's (``quant/api.py`` summarizes them)."""
    return {
        "node": node.outputs[0].name,
        "op": node.op,
        "scheme": scheme,
        "reason": None,
        "qop": qop,
        "fused": None,
        "value": node.outputs[0].name,
        "input_scale": [float(q.scale) for q in ins],
        "input_zero_point": [q.zp for q in ins],
        "output_scale": float(out.scale),
        "output_zero_point": int(out.zp),
    }


def _softmax(rw: Rewriter, node: Node) -> dict[str, Any]:
    xq = rw.as_int8(node.inputs[0])
    attrs = {"axis": node.attrs["axis"], "table": exp_table(float(xq.scale))}
    name = node.outputs[0].name
    v = rw.b.op("qsoftmax", [xq.value], attrs, name=name, provenance=node.provenance)
    q = rw.ints[name] = _qvalue(v, SOFTMAX_SCALE, SOFTMAX_ZP)
    return _entry(node, "int8 per-tensor", "qsoftmax", [xq], q)


def _layer_norm(rw: Rewriter, node: Node) -> dict[str, Any]:
    shape = node.attrs["normalized_shape"]
    if len(shape) != 1:
        raise _fallback("only a layer_norm over one trailing dim is integer (qlayer_norm)")
    n = int(shape[0])
    params = []
    for i, default in ((1, 1.0), (2, 0.0)):
        if i >= len(node.inputs):
            params.append(np.full(n, default, np.float32))
        elif node.inputs[i].name in rw.graph.constants:
            params.append(np.asarray(rw.graph.constants[node.inputs[i].name], np.float32))
        else:
            raise _fallback(f"layer_norm parameter %{node.inputs[i].name} is not a constant")
    name = node.outputs[0].name
    out = rw.out_params(name)
    xq = rw.as_int8(node.inputs[0])
    eps = float(node.attrs["eps"])
    attrs = {"x_zp": xq.zp, **layer_norm_params(*params, eps, float(xq.scale), float(out[0]), n)}
    q = rw.emit(node, "qlayer_norm", [xq.value], attrs, out, name)
    return _entry(node, "int8 per-channel", "qlayer_norm", [xq], q)


def _lut(rw: Rewriter, node: Node) -> dict[str, Any]:
    name = node.outputs[0].name
    out = rw.out_params(name)
    xq = rw.as_int8(node.inputs[0])
    opdef, attrs = get_op(node.op), node.attrs

    def fn(x: np.ndarray) -> np.ndarray:
        return opdef.evaluate([x], attrs)[0]

    table = lut_table(fn, float(xq.scale), xq.zp, float(out[0]), out[1])
    q = rw.emit(node, "qlut", [xq.value], {"table": table, "fn": node.op}, out, name)
    return _entry(node, "int8 per-tensor", "qlut", [xq], q)


def _move(rw: Rewriter, node: Node) -> dict[str, Any]:
    """transpose/permute/slice/expand of an int8 value: same values, same params; a split
    becomes one slice per output (single-output nodes are what packs lower)."""
    x = node.inputs[0]
    if x.name not in rw.ints:
        raise _fallback("its input is float; a data-movement op stays in float there")
    xq = rw.ints[x.name]
    quant = QuantParams.per_tensor(float(xq.scale), xq.zp)
    if node.op == "split":
        axis, start = node.attrs["axis"], 0
        calls = []
        for out, size in zip(node.outputs, node.attrs["sizes"], strict=True):
            attrs = {"axis": axis, "start": start, "end": start + size, "step": 1}
            calls.append(("slice", attrs, out.name))
            start += size
    else:
        calls = [(node.op, dict(node.attrs), node.outputs[0].name)]
    for (op, attrs, name), old in zip(calls, node.outputs, strict=True):
        inputs = [xq.value, *node.inputs[1:]] if op == node.op else [xq.value]
        (t,) = get_op(op).infer_types([v.type for v in inputs], attrs)
        (v,) = rw.b.op_multi(
            op, inputs, attrs, name=name, provenance=node.provenance,
            output_types=[t.with_quant(quant)],
        )  # fmt: skip
        rw.ints[old.name] = _qvalue(v, float(xq.scale), xq.zp)
    return _entry(node, "int8 pass-through", node.op, [xq], xq)


def _scalar(rw: Rewriter, v: Any) -> float | None:
    """The value of a one-element positive finite float constant, else None."""
    if v.name not in rw.graph.constants:
        return None
    c = np.asarray(rw.graph.constants[v.name])
    if c.size != 1 or not np.issubdtype(c.dtype, np.floating):
        return None
    value = float(c.reshape(-1)[0])
    return value if np.isfinite(value) and value > 0 else None


def _rescaled(rw: Rewriter, node: Node, act: Any, factor: float) -> dict[str, Any]:
    """x * c with c > 0: the int8 values of x at scale s_x * c, with no node at all."""
    xq = rw.as_int8(act)
    q = rw.ints[node.outputs[0].name] = _qvalue(xq.value, float(xq.scale) * factor, xq.zp)
    entry = _entry(node, "int8 pass-through", None, [xq], q)
    entry["reason"] = "a positive scalar factor only changes the scale"
    return entry


def _with_constants(base: Rule | None, op: str) -> Rule:
    """add/mul/div: a positive scalar constant factor rescales for free; another constant
    operand is quantized per tensor from its own range; else the core rule (``base``)."""

    def rule(rw: Rewriter, node: Node) -> dict[str, Any]:
        a, b = node.inputs[0], node.inputs[1]
        if op in ("mul", "div") and (c := _scalar(rw, b)) is not None:
            return _rescaled(rw, node, a, c if op == "mul" else 1.0 / c)
        if op == "mul" and (c := _scalar(rw, a)) is not None:
            return _rescaled(rw, node, b, c)
        if base is None:
            raise _fallback(f"'{op}' by a non-constant or non-positive value has no int8 form")
        for v in (a, b):
            if v.name in rw.graph.constants and v.name not in rw.ints:
                data = np.asarray(rw.graph.constants[v.name], np.float32)
                if not data.size or not np.all(np.isfinite(data)):
                    raise _fallback(f"constant %{v.name} is empty or not finite")
                s, zp = qarith.choose_qparams(float(data.min()), float(data.max()), False)
                qdata = qarith.quantize(data, s, zp)
                rw.ints[v.name] = _qvalue(rw.const(f"{v.name}_q", qdata), float(s), zp)
        return base(rw, node)

    return rule


def transformer_rules(base: Mapping[str, Rule]) -> dict[str, Rule]:
    """The rules this module adds to (or wraps in) the rewriter's table ``base``."""
    rules: dict[str, Rule] = {"softmax": _softmax, "layer_norm": _layer_norm}
    rules.update({op: _lut for op in LUT_ACTIVATIONS if op in REGISTRY})
    rules.update({op: _move for op in INT8_MOVES if op in REGISTRY})
    for op in ("add", "mul", "div"):
        rules[op] = _with_constants(base.get(op), op)
    return rules
