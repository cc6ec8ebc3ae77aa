"""Lowering of a Q/DQ graph (a captured QAT or torch.ao-converted model) to integer ops with the
model's own scales and zero points.

Used by ``quantize_module(mode="int8")`` when the graph holds quantize/dequantize pairs: the
pairs are stripped into per-value parameters (:func:`strip_qdq`), and the PTQ rewriter
(:mod:`cuvil_ref.quant.ptq`) runs with those parameters instead of calibrated ones and with the
imported weight scales, so the integer ops (qconv2d, qlinear, qadd...) and their multipliers
come from ``qarith.quantize_multiplier`` exactly as for PTQ. A value without a fake-quant stays
in float, as it does in torch. Calibration data is used only for the report's SQNR figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Graph, Module, Node, Value
from cuvil_ref.ir.verifier import verify
from cuvil_ref.ops import qarith
from cuvil_ref.passes.dce import eliminate_dead_code
from cuvil_ref.quant import ptq
from cuvil_ref.quant.report import io_entry, layer_entry
from cuvil_ref.quant.rewriter import Fallback, QValue, QWeight, Rewriter

INT8_RANGE = (qarith.INT8_MIN, qarith.INT8_MAX)


@dataclass(frozen=True)
class QDQParams:
    """The parameters of one quantize -> dequantize pair (``qmin``/``qmax``: its clamp range)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None
    qmin: int
    qmax: int


#: Float ops whose int8 output keeps the input's parameters in torch's quantized kernels.
INHERIT = frozenset({"avg_pool2d", "adaptive_avg_pool2d"})


def has_qdq(graph: Graph) -> bool:
    """Whether ``graph`` holds quantize -> dequantize pairs (an imported torch.ao model)."""
    return any(n.op == "quantize" for n in graph.nodes) and any(
        n.op == "dequantize" for n in graph.nodes
    )


def _params(node: Node, lo: int, hi: int) -> QDQParams:
    a = node.attrs
    return QDQParams(tuple(a["scale"]), tuple(a["zero_point"]), a["axis"], lo, hi)


@dataclass(frozen=True)
class Stripped:
    """A QDQ graph without its pairs: the float graph, activation and weight parameters."""

    graph: Graph
    activations: dict[str, QDQParams]
    weights: dict[str, QDQParams]
    requantize: frozenset[str] = frozenset()  # values re-fake-quantized with new parameters


def strip_qdq(graph: Graph) -> Stripped:
    """Remove every ``quantize [-> clamp] -> dequantize`` chain, recording its parameters on the
    float value it quantized (constants: weight parameters; others: activation parameters)."""
    users = graph.users()
    alias: dict[str, Value] = {}
    drop: set[int] = set()
    acts: dict[str, QDQParams] = {}
    weights: dict[str, QDQParams] = {}
    extra: dict[int, Node] = {}  # id(quantize node) -> requantize marker emitted in its place
    requant: set[str] = set()
    for q in graph.nodes:
        if q.op != "quantize":
            continue
        chain, readers = [q], users.get(q.outputs[0].name, [])
        lo, hi = INT8_RANGE
        if len(readers) == 1 and readers[0].op == "clamp":
            clamp = readers[0]
            lo = max(lo, int(np.ceil(clamp.attrs["min"])))
            hi = min(hi, int(np.floor(clamp.attrs["max"])))
            chain.append(clamp)
            readers = users.get(clamp.outputs[0].name, [])
        if not readers or any(r.op != "dequantize" or r.attrs != q.attrs for r in readers):
            continue
        src = alias.get(q.inputs[0].name, q.inputs[0])
        p = _params(q, lo, hi)
        table = weights if src.name in graph.constants else acts
        if table.get(src.name, p) != p:
            # fake-quant of an already fake-quantized value (e.g. across a dropout): a requantize,
            # marked by a no-op clamp whose output carries the second parameters
            out = Value(readers[0].outputs[0].name, src.type)
            marker = Node("clamp", (src,), (out,), FrozenDict({"min": None, "max": None}))
            extra[id(q)] = marker
            requant.add(out.name)
            src = out
        table[src.name] = p
        for r in readers:
            alias[r.outputs[0].name] = src
        drop.update(id(n) for n in (*chain, *readers))

    def rename(v: Value) -> Value:
        return alias.get(v.name, v)

    nodes = [
        Node(n.op, tuple(rename(v) for v in n.inputs), n.outputs, n.attrs, n.provenance)
        for n in (extra.get(id(m), m) for m in graph.nodes)
        if id(n) not in drop
    ]
    for n in nodes:  # avg pools requantize to their input's parameters in torch.ao
        if n.op in INHERIT and n.inputs[0].name in acts and n.outputs[0].name not in acts:
            acts[n.outputs[0].name] = acts[n.inputs[0].name]
    new = graph.replace(nodes=nodes, outputs=[rename(v) for v in graph.outputs])
    return Stripped(eliminate_dead_code(new).graph, acts, weights, frozenset(requant))


class ImportRewriter(Rewriter):
    """The PTQ rewriter with imported activation ranges and weight parameters."""

    def __init__(self, stripped: Stripped) -> None:
        per_tensor = {k: p for k, p in stripped.activations.items() if p.axis is None}
        qparams = {k: (np.float32(p.scale[0]), p.zero_point[0]) for k, p in per_tensor.items()}
        super().__init__(stripped.graph, qparams, per_channel=True, rules=IMPORT_RULES)
        self.ranges = {k: (p.qmin, p.qmax) for k, p in per_tensor.items()}
        self.weights = stripped.weights
        self.requant = stripped.requantize

    def rule_for(self, node: Node) -> ptq.Rule | None:
        # a value fake-quantized a second time becomes an integer requantize
        return _requantize if node.outputs[0].name in self.requant else super().rule_for(node)

    def finish(self, node: Node) -> None:
        self.retarget(node.outputs[0].name)

    def quantize_weight(self, name: str, w: np.ndarray) -> QWeight:
        """The weight at its imported scales and range (checked by :func:`_imported_weight`)."""
        p = self.weights[name]
        scales = np.broadcast_to(np.asarray(p.scale, np.float32), (w.shape[0],)).copy()
        zeros = np.zeros(w.shape[0], np.int64)
        values = qarith.quantize(w, scales, zeros, p.qmin, p.qmax, axis=0)
        scheme = "int8 per-channel" if p.axis == 0 else "int8 per-tensor"
        return QWeight(values, scales, scheme, {"params": "imported"})

    def fusable_activation(self, node: Node) -> Node | None:
        # torch quantizes a producer's output before its activation when both carry a fake-quant
        if node.outputs[0].name in self.qparams:
            return None
        return super().fusable_activation(node)

    def retarget(self, name: str) -> None:
        """Requantize a pass-through result (kept at its input's parameters) to its own."""
        q = self.ints.get(name)
        if q is None or name not in self.qparams:
            return
        scale, zp = self.qparams[name]
        lo, hi = self.ranges[name]
        if (float(q.scale), q.zp) == (float(scale), zp) and (lo, hi) == INT8_RANGE:
            return
        mult, shift = qarith.quantize_multiplier(float(q.scale) / float(scale))
        attrs = {"x_zp": q.zp, "multiplier": (mult,), "shift": (shift,), "out_scale": float(scale)}
        attrs.update({"out_zp": zp, "qmin": lo, "qmax": hi})
        v = self.b.op("requantize", [q.value], attrs, name=f"{name}_rq")
        self.ints[name] = QValue(v, np.float32(scale), zp)

    def emit(
        self,
        node: Node,
        op: str,
        inputs: list[Value],
        attrs: dict[str, Any],
        out: tuple[np.float32, int],
        final: str,
    ) -> QValue:
        lo, hi = self.ranges.get(final, INT8_RANGE)
        qmin, qmax = max(attrs.get("qmin", lo), lo), min(attrs.get("qmax", hi), hi)
        return super().emit(node, op, inputs, {**attrs, "qmin": qmin, "qmax": qmax}, out, final)

    def as_int8(self, v: Value) -> QValue:
        fresh = v.name not in self.ints
        q = super().as_int8(v)
        lo, hi = self.ranges.get(v.name, INT8_RANGE)
        if fresh and (lo, hi) != INT8_RANGE:
            clamped = self.b.op("clamp", [q.value], {"min": float(lo), "max": float(hi)})
            q = QValue(clamped, q.scale, q.zp)
            self.ints[v.name] = q
        return q


def _requantize(rw: Rewriter, node: Node) -> dict[str, Any]:
    """A value fake-quantized again with new parameters: an integer requantize."""
    name = node.outputs[0].name
    out = rw.out_params(name)
    xq = rw.as_int8(node.inputs[0])
    mult, shift = qarith.quantize_multiplier(float(xq.scale) / float(out[0]))
    attrs = {"x_zp": xq.zp, "multiplier": (mult,), "shift": (shift,)}
    q = rw.emit(node, "requantize", [xq.value], attrs, out, name)
    return layer_entry(node, "int8 per-tensor", qop="requantize", **io_entry([xq], q))


def _imported_weight(rule: ptq.Rule) -> ptq.Rule:
    """PTQ's conv2d/linear rule, taken only when the weight has imported symmetric parameters
    along the output channel (or per tensor); :meth:`ImportRewriter.quantize_weight` uses them."""

    def checked(rw: Rewriter, node: Node) -> dict[str, Any]:
        assert isinstance(rw, ImportRewriter)
        w_name = node.inputs[1].name
        p = rw.weights.get(w_name)
        if p is None:
            raise Fallback(f"weight %{w_name} has no fake-quant; torch runs this layer in float")
        if any(z != 0 for z in p.zero_point) or p.axis not in (None, 0):
            raise Fallback("only symmetric weights quantized along the output channel are int8 ops")
        return rule(rw, node)

    return checked


def _matmul(rw: Rewriter, node: Node) -> dict[str, Any]:
    if node.inputs[1].name in rw.graph.constants:
        raise Fallback("a matmul by a constant has no imported weight parameters")
    return ptq.RULES["matmul"](rw, node)


IMPORT_RULES: Mapping[str, ptq.Rule] = {
    **ptq.RULES,
    "conv2d": _imported_weight(ptq.RULES["conv2d"]),
    "linear": _imported_weight(ptq.RULES["linear"]),
    "matmul": _matmul,
}


def lower_qdq(module: Module, calibration_data: Any = None) -> tuple[Module, dict[str, Any]]:
    """Lower an imported QDQ module to integer ops; returns ``(module, report)``.

    With ``calibration_data``, the report has ``output_sqnr_db`` (versus the model without any
    fake-quant, fp32) and ``output_sqnr_vs_fake_quant_db`` (versus the captured fake-quant graph),
    and a per-layer ``sqnr_db``.
    """
    from cuvil_ref.quant.calibrate import normalize_batches
    from cuvil_ref.quant.report import float_fallback, layer_sqnr, output_sqnr, summary

    stripped = strip_qdq(module.graph)
    rw = ImportRewriter(stripped)
    qgraph = eliminate_dead_code(rw.run()).graph
    verify(qgraph)
    layers = rw.layers
    report: dict[str, Any] = {
        "mode": "int8",
        "source": "torch.ao quantization parameters (fake-quant / converted modules)",
        "imported_activations": len(stripped.activations),
        "imported_weights": len(stripped.weights),
        "layers": layers,
        "output_sqnr_db": None,
        "output_sqnr_vs_fake_quant_db": None,
    }
    if calibration_data is not None:
        batches = normalize_batches(stripped.graph, calibration_data)
        live = {v.name for n in qgraph.nodes for v in n.outputs}
        vmap = {k: (q.value.name, q) for k, q in rw.ints.items() if q.value.name in live}
        vmap.update({k: (v.name, None) for k, v in rw.floats.items() if k not in vmap})
        layer_sqnr(stripped.graph, qgraph, batches[0], layers, vmap)
        report["output_sqnr_db"] = output_sqnr(stripped.graph, qgraph, batches)
        report["output_sqnr_vs_fake_quant_db"] = output_sqnr(module.graph, qgraph, batches)
    else:
        for layer in layers:
            layer.pop("value", None)
    report["summary"] = summary(layers)
    report["float_fallback"] = float_fallback(layers)
    return Module(qgraph, module.name, module.metadata.replace(quantization="int8")), report
