"""The quantization report's pieces, shared by PTQ, the torch.ao Q/DQ lowering and fp16/bf16:
per-node layer entries, their SQNR against fp32, the output SQNR and the scheme summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops import qarith
from cuvil_ref.quant.calibrate import Batch, power_ratio_db, record, sqnr_db, walk

if TYPE_CHECKING:
    from cuvil_ref.quant.rewriter import QValue


def layer_entry(node: Node, scheme: str, reason: str | None = None, **info: Any) -> dict[str, Any]:
    return {
        "node": node.outputs[0].name,
        "op": node.op,
        "scheme": scheme,
        "reason": reason,
        "qop": None,
        "fused": None,
        "value": node.outputs[0].name,
        **info,
    }


def io_entry(inputs: list[QValue], out: QValue | tuple[np.float32, int]) -> dict[str, Any]:
    scale, zp = out if isinstance(out, tuple) else (out.scale, out.zp)
    return {
        "input_scale": [float(q.scale) for q in inputs],
        "input_zero_point": [q.zp for q in inputs],
        "output_scale": float(scale),
        "output_zero_point": int(zp),
    }


def layer_sqnr(
    graph: Graph,
    qgraph: Graph,
    batch: Batch,
    layers: list[dict[str, Any]],
    vmap: dict[str, tuple[str, QValue | None]],
) -> None:
    """Add ``sqnr_db`` (fp32 vs quantized, dequantized) to every layer entry, in place."""
    ref = record(graph, batch)
    got = record(qgraph, batch)
    for layer in layers:
        name = layer.pop("value")
        if name not in vmap or name not in ref:
            layer["sqnr_db"] = None
            continue
        new_name, q = vmap[name]
        value = got[new_name]
        if q is not None:
            value = qarith.dequantize(value, q.scale, q.zp)
        layer["sqnr_db"] = sqnr_db(ref[name], value) if value.shape == ref[name].shape else None


def output_sqnr(graph: Graph, qgraph: Graph, batches: list[Batch]) -> list[float]:
    """SQNR of each graph output over all batches (signal and noise summed across batches)."""
    signal = np.zeros(len(graph.outputs))
    noise = np.zeros(len(graph.outputs))
    for batch in batches:
        ref = walk(graph, batch, lambda name, array: None)
        got = walk(qgraph, batch, lambda name, array: None)
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            r64 = r.astype(np.float64)
            signal[i] += float(np.sum(r64 * r64))
            noise[i] += float(np.sum((r64 - g.astype(np.float64)) ** 2))
    return [power_ratio_db(float(s), float(n)) for s, n in zip(signal, noise, strict=True)]


def summary(layers: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"int8": 0, "pass_through": 0, "fused": 0, "float_fallback": 0}
    for layer in layers:
        scheme = layer["scheme"]
        if scheme == "control flow":  # its regions' layers count on their own
            counts["control_flow"] = counts.get("control_flow", 0) + 1
            for region in layer.get("regions", ()):
                for key, n in summary(region["layers"]).items():
                    counts[key] = counts.get(key, 0) + n
            continue
        key = (
            "int8"
            if scheme.startswith("int8 per")
            else "pass_through"
            if scheme == "int8 pass-through"
            else "fused"
            if scheme == "fused"
            else "float_fallback"
        )
        counts[key] += 1
    return counts


def float_fallback(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The layers kept in float, with the reason (those inside regions too)."""
    out = []
    for x in layers:
        if x["scheme"] == "float-fallback":
            out.append({"node": x["node"], "op": x["op"], "reason": x["reason"]})
        for region in x.get("regions", ()):
            out.extend(float_fallback(region["layers"]))
    return out
