"""Automatic mixed precision (``quantize="mixed"``): int8 where it is harmless, float elsewhere.

1. Calibrate once, as for int8 PTQ (:mod:`cuvil_ref.quant.calibrate`).
2. **Sensitivity** of each int8 layer (a node that does integer arithmetic: qconv2d, qlinear,
   qadd...): the output SQNR, over the calibration batches, of the model in which *only that
   layer* is int8 and everything else fp32. Lower SQNR = more sensitive.
3. Keep the ``k`` most sensitive layers in ``fallback_precision`` (``"fp16"`` default, ``"bf16"``
   or ``"fp32"``) and quantize the rest, with the smallest ``k`` whose output SQNR reaches
   ``min_sqnr_db`` (default 30 dB). ``k`` is found by bisection over the sensitivity order
   (output SQNR grows with ``k`` in practice), then checked, stepping up if needed.

The report lists every layer's ``precision`` (``int8``, ``fp16``, ``bf16`` or ``fp32``) and the
candidates' ``sensitivity_db``; ``budget_met`` is false when even keeping every layer in float
misses the budget (possible with fp16/bf16 fallback).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.interpreter import check_input, run_node
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from cuvil_ref.quant.calibrate import Batch, calibrate, normalize_batches, power_ratio_db, record
from cuvil_ref.quant.lowp import LOW, to_low_precision
from cuvil_ref.quant.ptq import quantize_graph

FALLBACKS = ("fp16", "bf16", "fp32")


def _int8_layer(layer: dict[str, Any]) -> bool:
    return str(layer["scheme"]).startswith("int8 per")


class _Search:
    """Builds and scores graphs with a given set of layers kept in float."""

    def __init__(
        self,
        graph: Graph,
        batches: list[Batch],
        qparams: Any,
        per_channel: bool,
        fallback: str,
    ) -> None:
        self.graph, self.batches, self.qparams = graph, batches, qparams
        self.per_channel, self.fallback = per_channel, fallback
        self.values = [record(graph, b) for b in batches]  # fp32 activations, for prefixes
        self.reference = [[vals[v.name] for v in graph.outputs] for vals in self.values]
        _, self.layers, _ = quantize_graph(graph, qparams, per_channel=per_channel)
        self.candidates = [x["node"] for x in self.layers if _int8_layer(x)]
        self.fused_into: dict[str, list[str]] = {}
        for x in self.layers:
            if x["scheme"] == "fused":
                owner = str(x["reason"]).removeprefix("fused into %")
                self.fused_into.setdefault(owner, []).append(x["node"])
        self.evaluations = 0

    def build(
        self, kept: Collection[str], low: bool = True
    ) -> tuple[Graph, list[dict[str, Any]], set[str]]:
        graph, layers, _ = quantize_graph(
            self.graph, self.qparams, per_channel=self.per_channel, skip_nodes=kept
        )
        low_nodes = set(kept) | {f for k in kept for f in self.fused_into.get(k, [])}
        if low and low_nodes and self.fallback in LOW:
            graph, _ = to_low_precision(graph, LOW[self.fallback], nodes=low_nodes)
        return graph, layers, low_nodes

    def score(self, graph: Graph) -> float:
        """The worst output's SQNR (dB) against fp32, signal and noise summed over batches."""
        self.evaluations += 1
        n = len(self.graph.outputs)
        signal, noise = np.zeros(n), np.zeros(n)
        for batch, ref, values in zip(self.batches, self.reference, self.values, strict=True):
            got = self.run(graph, batch, values)
            for i, (r, g) in enumerate(zip(ref, got, strict=True)):
                r64 = r.astype(np.float64)
                signal[i] += float(np.sum(r64 * r64))
                noise[i] += float(np.sum((r64 - g.astype(np.float64)) ** 2))
        return min(power_ratio_db(float(s), float(e)) for s, e in zip(signal, noise, strict=True))

    def run(self, graph: Graph, batch: Batch, values: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Interpret ``graph``, reusing the recorded fp32 values for its leading nodes that are
        unchanged copies of the float graph's (the rewrites emit nodes in the original order and
        keep their names; the first quantize/cast/integer op ends the shared prefix)."""
        bindings: dict[str, int] = {}
        env: dict[str, Any] = dict(graph.constants)
        for value, array in zip(graph.inputs, batch, strict=True):
            env[value.name] = check_input(value.name, value.type, array, bindings)
        start = len(graph.nodes)
        for i, node in enumerate(graph.nodes):
            if node.op in ("quantize", "cast") or node.op[:1] == "q":
                start = i
                break
            for v in node.outputs:
                env[v.name] = values[v.name]
        for node in graph.nodes[start:]:
            results = run_node(node, [env[v.name] for v in node.inputs], bindings)
            for v, r in zip(node.outputs, results, strict=True):
                env[v.name] = r
        return [np.asarray(env[v.name]) for v in graph.outputs]

    def sensitivity(self) -> dict[str, float]:
        """Output SQNR with only one layer int8 (the rest fp32), per candidate layer."""
        everything = set(self.candidates)
        return {c: self.score(self.build(everything - {c}, low=False)[0]) for c in self.candidates}


def quantize_mixed(
    module: Module,
    calibration_data: Any,
    *,
    min_sqnr_db: float = 30.0,
    fallback_precision: str = "fp16",
    observer: str = "minmax",
    per_channel: bool = True,
    **observer_options: Any,
) -> tuple[Module, dict[str, Any]]:
    """Mixed int8 / float quantization meeting ``min_sqnr_db``; returns ``(module, report)``."""
    if calibration_data is None:
        raise QuantizationError(
            "quantize='mixed' measures each layer's sensitivity on data: pass "
            "calibration_data=[batch, ...] with representative inputs"
        )
    if fallback_precision not in FALLBACKS:
        raise QuantizationError(
            f"quantize='mixed': fallback_precision {fallback_precision!r} is not one of "
            f"{list(FALLBACKS)}"
        )
    if module.graph.has_regions:
        raise QuantizationError(
            "quantize='mixed' searches per-layer precisions over the whole graph and does not "
            "handle control flow (if/while regions) yet; use quantize='int8' (every region is "
            "quantized on its own) or 'fp16'/'bf16'"
        )
    graph = fold_batchnorm(module.graph).graph
    batches = normalize_batches(graph, calibration_data)
    qparams = calibrate(graph, batches, observer, **observer_options)
    search = _Search(graph, batches, qparams, per_channel, fallback_precision)
    sens = search.sensitivity()
    order = sorted(search.candidates, key=lambda c: sens[c])  # most sensitive first
    scores: dict[int, float] = {}

    def score(k: int) -> float:
        if k not in scores:
            scores[k] = search.score(search.build(order[:k])[0])
        return scores[k]

    lo, hi = 0, len(order)
    if score(0) < min_sqnr_db:
        while lo < hi:  # smallest k with score(k) >= budget, assuming it grows with k
            mid = (lo + hi) // 2
            if score(mid) >= min_sqnr_db:
                hi = mid
            else:
                lo = mid + 1
        while lo < len(order) and score(lo) < min_sqnr_db:
            lo += 1
    kept = order[:lo]
    qgraph, layers, low_nodes = search.build(kept)
    for layer in layers:
        layer.pop("value", None)
        if layer["scheme"] == "float-fallback":
            float_kind = fallback_precision if layer["node"] in low_nodes else "fp32"
            layer["precision"] = float_kind
        else:
            layer["precision"] = "int8"
        layer["sensitivity_db"] = sens.get(layer["node"])
    counts: dict[str, int] = {}
    for layer in layers:
        counts[layer["precision"]] = counts.get(layer["precision"], 0) + 1
    final = score(lo)
    report = {
        "mode": "mixed",
        "observer": observer,
        "min_sqnr_db": float(min_sqnr_db),
        "fallback_precision": fallback_precision,
        "budget_met": final >= min_sqnr_db,
        "output_sqnr_db": final,
        "all_int8_sqnr_db": score(0),
        "kept_in_float": list(kept),
        "calibration_batches": len(batches),
        "evaluations": search.evaluations,
        "layers": layers,
        "summary": counts,
        "float_fallback": [
            {"node": x["node"], "op": x["op"], "reason": x["reason"]}
            for x in layers
            if x["scheme"] == "float-fallback" and x["node"] not in low_nodes
        ],
    }
    return Module(qgraph, module.name, module.metadata.replace(quantization="mixed")), report
