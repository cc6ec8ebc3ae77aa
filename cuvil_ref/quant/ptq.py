"""Post-training int8 rewrite of a calibrated float graph into integer ops.

Conceptually every calibrated float value gets a quantize/dequantize pair, and each
``dq -> op -> q`` pattern around a heavy op is folded into one integer op whose scales and zero
points become constants (weights, int32 biases) and attributes (multipliers, shifts, clamp bounds).
The rewrite does exactly that in one forward walk, materializing a pair only where it survives:
each original value has a float version, an int8 version, or both, and a ``quantize`` or
``dequantize`` node is emitted the first time the missing version is needed.

* Requantizing ops (conv2d, linear, matmul, add, mul, concat, avg/adaptive-avg pooling) always
  become integer ops; conv2d/linear/matmul/add/mul also absorb a following relu/relu6 (only user)
  into their clamp bounds, with the output range calibrated after the activation.
* Pass-through ops (max_pool2d, flatten, reshape... and a standalone relu/relu6 as an integer clamp)
  run on int8 with the input's scale and zero point, when their input already is int8.
* Anything else stays float: its inputs are dequantized, and its output is quantized again when an
  integer op reads it. The per-node report says why.

Weights are symmetric int8 (per output channel or per tensor), biases int32 at scale
``s_in * s_w[c]``; every accumulating op passes ``check_accumulator_bound`` with its real bias.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ir.types import QuantParams
from cuvil_ref.ops import REGISTRY, families, get_op, qarith
from cuvil_ref.ops.qpool import adaptive_windows
from cuvil_ref.passes.dce import eliminate_dead_code
from cuvil_ref.quant.report import io_entry, layer_entry
from cuvil_ref.quant.rewriter import Fallback, QValue, Rewriter, Rule

#: Ops that run unchanged on int8 data (views: the same bytes, so the same scale and zero point).
PASS_THROUGH = families.VIEWS


# --- rules ---------------------------------------------------------------------------------------


def _weight(rw: Rewriter, v: Value, what: str) -> np.ndarray:
    if v.name not in rw.graph.constants or not v.type.dtype.is_float:
        raise Fallback(f"{what} %{v.name} is not a float constant")
    return np.asarray(rw.graph.constants[v.name], np.float32)


def _accumulating(
    rw: Rewriter,
    node: Node,
    op: str,
    x: Value,
    w: np.ndarray,
    bias: np.ndarray | None,
    k: int,
    attrs: dict[str, Any],
) -> dict[str, Any]:
    """conv2d / linear: int8 weight, int32 bias, per-channel multipliers, fused activation."""
    kind, final = rw.fuse(node)
    out = rw.out_params(final)
    xq = rw.as_int8(x)
    qweight = rw.quantize_weight(node.inputs[1].name, w)
    qw, sw = qweight.values, qweight.scales
    bias_scale = np.array([float(xq.scale) * float(s) for s in sw])
    inputs = [xq.value, rw.const(f"{node.inputs[1].name}_q", qw)]
    max_bias = 0
    if bias is not None:
        qb = np.rint(np.asarray(bias, np.float64) / bias_scale)
        if np.abs(qb).max(initial=0) > qarith.INT32_MAX:
            raise Fallback("the int32 bias overflows at scale s_in * s_w")
        qb = qb.astype(np.int32)
        max_bias = int(np.abs(qb.astype(np.int64)).max(initial=0))
        inputs.append(rw.const(f"{node.inputs[-1].name}_q", qb))
    try:
        qarith.check_accumulator_bound(k, max_bias)
    except QuantizationError as exc:
        raise Fallback(f"{exc}") from exc
    ratios = [float(xq.scale) * float(s) / float(out[0]) for s in sw]
    if not rw.per_channel:
        ratios = ratios[:1]
    mult, shift = qarith.quantize_multipliers(ratios)
    qmin, qmax = qarith.relu_bounds(kind, out[0], out[1])
    attrs = {
        **attrs,
        "x_zp": xq.zp,
        "multiplier": tuple(int(m) for m in mult),
        "shift": tuple(int(s) for s in shift),
        "qmin": qmin,
        "qmax": qmax,
    }
    q = rw.emit(node, op, inputs, attrs, out, final)
    rw.claim(node, kind, final)
    return layer_entry(
        node,
        qweight.scheme,
        qop=op,
        fused=kind,
        value=final,
        **io_entry([xq], q),
        weight_scales={"min": float(sw.min()), "max": float(sw.max()), "count": int(sw.size)},
        **qweight.info,
    )


def _conv2d(rw: Rewriter, node: Node) -> dict[str, Any]:
    w = _weight(rw, node.inputs[1], "weight")
    bias = _weight(rw, node.inputs[2], "bias") if len(node.inputs) > 2 else None
    keys = ("stride", "padding", "dilation", "groups")
    k = int(np.prod(w.shape[1:]))
    return _accumulating(
        rw, node, "qconv2d", node.inputs[0], w, bias, k, {key: node.attrs[key] for key in keys}
    )


def _linear(rw: Rewriter, node: Node) -> dict[str, Any]:
    w = _weight(rw, node.inputs[1], "weight")
    bias = _weight(rw, node.inputs[2], "bias") if len(node.inputs) > 2 else None
    if bias is not None and bias.shape != (w.shape[0],):
        raise Fallback("the bias is not one value per output feature")
    return _accumulating(rw, node, "qlinear", node.inputs[0], w, bias, w.shape[1], {})


def _matmul(rw: Rewriter, node: Node) -> dict[str, Any]:
    a, b = node.inputs
    if b.name in rw.graph.constants:
        w = _weight(rw, b, "right operand")
        if w.ndim != 2 or a.type.rank < 2:
            raise Fallback("a constant right operand must be 2-D with a left operand of rank >= 2")
        return _accumulating(
            rw, node, "qlinear", a, np.ascontiguousarray(w.T), None, w.shape[0], {}
        )
    kind, final = rw.fuse(node)
    out = rw.out_params(final)
    aq, bq = rw.as_int8(a), rw.as_int8(b)
    mult, shift = qarith.quantize_multiplier(float(aq.scale) * float(bq.scale) / float(out[0]))
    qmin, qmax = qarith.relu_bounds(kind, out[0], out[1])
    attrs = {
        "a_zp": aq.zp,
        "b_zp": bq.zp,
        "multiplier": (mult,),
        "shift": (shift,),
        "qmin": qmin,
        "qmax": qmax,
    }
    q = rw.emit(node, "qmatmul", [aq.value, bq.value], attrs, out, final)
    rw.claim(node, kind, final)
    return layer_entry(
        node, "int8 per-tensor", qop="qmatmul", fused=kind, value=final, **io_entry([aq, bq], q)
    )


def _binary(op: str) -> Callable[[Rewriter, Node], dict[str, Any]]:
    def rule(rw: Rewriter, node: Node) -> dict[str, Any]:
        kind, final = rw.fuse(node)
        out = rw.out_params(final)
        aq, bq = rw.as_int8(node.inputs[0]), rw.as_int8(node.inputs[1])
        so = float(out[0])
        if op == "qadd":
            mults, shift = qarith.shared_shift_multipliers(
                [float(aq.scale) / so, float(bq.scale) / so]
            )
            rescale = {"multiplier": mults, "shift": (shift,)}
        else:
            m, s = qarith.quantize_multiplier(float(aq.scale) * float(bq.scale) / so)
            rescale = {"multiplier": (m,), "shift": (s,)}
        qmin, qmax = qarith.relu_bounds(kind, out[0], out[1])
        attrs = {"a_zp": aq.zp, "b_zp": bq.zp, **rescale, "qmin": qmin, "qmax": qmax}
        q = rw.emit(node, op, [aq.value, bq.value], attrs, out, final)
        rw.claim(node, kind, final)
        io = io_entry([aq, bq], q)
        return layer_entry(node, "int8 per-tensor", qop=op, fused=kind, value=final, **io)

    return rule


def _concat(rw: Rewriter, node: Node) -> dict[str, Any]:
    out = rw.out_params(node.outputs[0].name)
    qs = [rw.as_int8(v) for v in node.inputs]
    mult, shift = qarith.quantize_multipliers([float(q.scale) / float(out[0]) for q in qs])
    attrs = {
        "axis": node.attrs.get("axis", 0),
        "x_zp": tuple(q.zp for q in qs),
        "multiplier": tuple(int(m) for m in mult),
        "shift": tuple(int(s) for s in shift),
    }
    q = rw.emit(node, "qconcat", [q.value for q in qs], attrs, out, node.outputs[0].name)
    return layer_entry(node, "int8 per-tensor", qop="qconcat", **io_entry(qs, q))


def _window(node: Node) -> dict[str, Any]:
    """kernel/stride/padding(4)/ceil_mode of a float pool, for its integer form."""
    if node.inputs[0].type.rank != 4:
        raise Fallback("only 4-D [N, C, H, W] pooling is quantized")
    a = node.attrs
    pad = tuple(a.get("padding", (0, 0)))
    pad = pad * 2 if len(pad) == 2 else pad
    stride = a.get("stride") or a["kernel"]
    return {
        "kernel": a["kernel"],
        "stride": stride,
        "padding": pad,
        "ceil_mode": a.get("ceil_mode", False),
    }


def _pool_table(xq: QValue, out: tuple[np.float32, int], n_max: int) -> dict[str, Any]:
    ratios = [float(xq.scale) / (float(out[0]) * n) for n in range(1, n_max + 1)]
    mult, shift = qarith.quantize_multipliers(ratios)
    return {
        "x_zp": xq.zp,
        "multiplier": tuple(int(m) for m in mult),
        "shift": tuple(int(s) for s in shift),
    }


def _avg_pool2d(rw: Rewriter, node: Node) -> dict[str, Any]:
    if node.attrs.get("divisor_override") is not None:
        raise Fallback("divisor_override is not quantized")
    win = _window(node)
    out = rw.out_params(node.outputs[0].name)
    xq = rw.as_int8(node.inputs[0])
    kh, kw = win["kernel"]
    attrs = {
        **win,
        "count_include_pad": node.attrs.get("count_include_pad", True),
        **_pool_table(xq, out, kh * kw),
    }
    q = rw.emit(node, "qavg_pool2d", [xq.value], attrs, out, node.outputs[0].name)
    return layer_entry(node, "int8 per-tensor", qop="qavg_pool2d", **io_entry([xq], q))


def _adaptive_avg_pool2d(rw: Rewriter, node: Node) -> dict[str, Any]:
    x = node.inputs[0]
    if x.type.rank != 4 or not all(isinstance(d, int) for d in x.type.shape[2:]):
        raise Fallback("needs a 4-D input with static spatial dims")
    out = rw.out_params(node.outputs[0].name)
    xq = rw.as_int8(x)
    (oh, ow), (h, w) = node.attrs["output_size"], x.type.shape[2:]
    n_max = int(adaptive_windows(h, oh)[2].max()) * int(adaptive_windows(w, ow)[2].max())
    attrs = {"output_size": (oh, ow), **_pool_table(xq, out, n_max)}
    q = rw.emit(node, "qadaptive_avg_pool2d", [xq.value], attrs, out, node.outputs[0].name)
    return layer_entry(node, "int8 per-tensor", qop="qadaptive_avg_pool2d", **io_entry([xq], q))


def _typed(
    rw: Rewriter, node: Node, op: str, inputs: list[Value], attrs: Any, xq: QValue
) -> dict[str, Any]:
    """Append a pass-through op on int8, tagging its output with the input's params."""
    (t,) = get_op(op).infer_types([v.type for v in inputs], attrs)
    quant = QuantParams.per_tensor(float(xq.scale), xq.zp)
    (v,) = rw.b.op_multi(
        op,
        inputs,
        attrs,
        name=node.outputs[0].name,
        provenance=node.provenance,
        output_types=[t.with_quant(quant)],
    )
    rw.ints[node.outputs[0].name] = QValue(v, xq.scale, xq.zp)
    return layer_entry(node, "int8 pass-through", qop=op, **io_entry([xq], (xq.scale, xq.zp)))


def _int8_input(rw: Rewriter, node: Node) -> QValue:
    x = node.inputs[0]
    if x.name not in rw.ints:
        raise Fallback("its input is float; a pass-through op stays in float there")
    return rw.ints[x.name]


def _max_pool2d(rw: Rewriter, node: Node) -> dict[str, Any]:
    xq = _int8_input(rw, node)
    attrs = {**_window(node), "dilation": node.attrs.get("dilation", (1, 1))}
    return _typed(rw, node, "qmax_pool2d", [xq.value], attrs, xq)


def _pass_through(rw: Rewriter, node: Node) -> dict[str, Any]:
    xq = _int8_input(rw, node)
    try:
        return _typed(rw, node, node.op, [xq.value, *node.inputs[1:]], node.attrs, xq)
    except QuantizationError:
        raise
    except Exception as exc:  # the op does not accept int8 here
        raise Fallback(f"'{node.op}' does not run on int8: {exc}") from exc


def _activation(rw: Rewriter, node: Node) -> dict[str, Any]:
    """A relu/relu6 not fused into its producer: an integer clamp at the input's params."""
    xq = _int8_input(rw, node)
    lo, hi = qarith.relu_bounds(node.op, xq.scale, xq.zp)
    return _typed(rw, node, "clamp", [xq.value], {"min": float(lo), "max": float(hi)}, xq)


RULES: dict[str, Rule] = {
    "conv2d": _conv2d,
    "linear": _linear,
    "matmul": _matmul,
    "add": _binary("qadd"),
    "mul": _binary("qmul"),
    "concat": _concat,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "relu": _activation,
    "relu6": _activation,
    **{op: _pass_through for op in PASS_THROUGH if op in REGISTRY},
}

# Integer transformer ops (softmax, layer_norm, GELU tables, int8 data movement, constants).
from cuvil_ref.quant.transformer_rules import transformer_rules  # noqa: E402

RULES.update(transformer_rules(RULES))

# Control flow: float at the node, its regions quantized on their own (quant/regions.py).
from cuvil_ref.quant.regions import rules as control_flow_rules  # noqa: E402

RULES.update(control_flow_rules())


def quantize_graph(
    graph: Graph,
    qparams: Mapping[str, tuple[np.float32, int]],
    *,
    per_channel: bool = True,
    skip: Collection[str] = (),
    skip_nodes: Collection[str] = (),
) -> tuple[Graph, list[dict[str, Any]], dict[str, tuple[str, QValue | None]]]:
    """Rewrite a calibrated float graph; returns (graph, per-node report, value map).

    ``skip`` keeps nodes in float by op name or output name; ``skip_nodes`` by output name only.

    The value map sends each original value name to ``(new name, QValue or None)``: its live int8
    version (with its params) if one exists, else its live float version. Nodes left dead by a
    rule that fell back half way (a quantize nobody reads) are removed.
    """
    rw = Rewriter(graph, qparams, per_channel=per_channel, skip=skip, skip_nodes=skip_nodes)
    new = eliminate_dead_code(rw.run()).graph
    live = {v.name for v in new.inputs} | {v.name for n in new.nodes for v in n.outputs}
    vmap: dict[str, tuple[str, QValue | None]] = {
        name: (v.name, None) for name, v in rw.floats.items() if v.name in live
    }
    vmap.update({name: (q.value.name, q) for name, q in rw.ints.items() if q.value.name in live})
    return new, rw.layers, vmap
