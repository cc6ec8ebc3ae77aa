"""``quantize_module``: post-training int8 quantization of an IR module, with a report.

Pipeline: fold batch norms into convs (the ``fold_batchnorm`` pass), calibrate every float
activation on the calibration batches with the reference interpreter
(:mod:`cuvil_ref.quant.calibrate`), rewrite into integer ops (:mod:`cuvil_ref.quant.ptq`),
verify, then measure: per-layer SQNR against fp32 on the first calibration batch and the output
SQNR over all calibration batches.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.ir.verifier import verify
from cuvil_ref.ops import qarith
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from cuvil_ref.quant.calibrate import (
    OBSERVERS,
    Batch,
    normalize_batches,
    power_ratio_db,
    record,
    sqnr_db,
    walk,
)
from cuvil_ref.quant.calibrate import calibrate as run_calibration
from cuvil_ref.quant.ptq import QValue, quantize_graph

MISSING_DATA = (
    "int8 accuracy needs representative calibration data; without it activation ranges are "
    "guessed from a single example and outliers will saturate"
)


def quantize_module(
    module: Module | Graph,
    mode: str = "int8",
    calibration_data: Any = None,
    *,
    observer: str = "minmax",
    per_channel: bool = True,
    skip: Collection[str] = (),
    example_inputs: Any = None,
    **observer_options: Any,
) -> tuple[Module, dict[str, Any]]:
    """Quantize ``module``; returns ``(quantized module, report)``.

    ``mode``: ``"int8"`` (below); ``"fp16"``/``"bf16"`` (:mod:`cuvil_ref.quant.lowp`: no
    calibration needed, data only feeds the report's SQNR); ``"mixed"``
    (:mod:`cuvil_ref.quant.mixed`, options ``min_sqnr_db`` and ``fallback_precision``). A graph
    holding quantize/dequantize pairs (a captured QAT or torch.ao-converted model) is lowered
    with its own scales (:mod:`cuvil_ref.quant.torch_import`).

    ``calibration_data`` is an iterable of batches (each a tuple with one array/tensor per graph
    input, or a single array for one-input graphs) or one such batch. When it is ``None`` a
    ``UserWarning`` is issued and ``example_inputs`` (one batch) is used; with neither, a
    :class:`QuantizationError` asks for calibration data. ``observer`` is one of ``minmax``,
    ``moving_average``, ``percentile``, ``mse`` (extra keyword arguments go to it);
    ``per_channel`` picks per-output-channel weight scales; ``skip`` lists op names or node
    output names to keep in float.
    """
    mod = module if isinstance(module, Module) else Module(module)
    if mode in ("fp16", "bf16"):
        from cuvil_ref.quant.lowp import quantize_lowp

        return quantize_lowp(mod, mode, calibration_data, example_inputs=example_inputs)
    if mode == "mixed":
        from cuvil_ref.quant.mixed import quantize_mixed

        return quantize_mixed(
            mod,
            calibration_data if calibration_data is not None else example_inputs,
            observer=observer,
            per_channel=per_channel,
            **observer_options,
        )
    if mode != "int8":
        raise QuantizationError(
            f"quantize_module: unknown mode {mode!r}; choose 'int8', 'fp16', 'bf16' or 'mixed'"
        )
    from cuvil_ref.quant.torch_import import has_qdq, lower_qdq

    if has_qdq(mod.graph):  # a QAT / torch.ao-converted model: its own scales, no calibration
        return lower_qdq(mod, calibration_data if calibration_data is not None else example_inputs)
    if observer not in OBSERVERS:
        raise QuantizationError(
            f"quantize_module: unknown observer {observer!r}; choose one of {', '.join(OBSERVERS)}"
        )
    if calibration_data is None:
        warnings.warn(
            f"quantize_module: no calibration_data given; {MISSING_DATA}", UserWarning, stacklevel=2
        )
        if example_inputs is None:
            raise QuantizationError(
                "quantize_module: no calibration data; pass calibration_data=[batch, ...] with "
                "representative inputs (each batch a tuple of arrays, one per model input)"
            )
        calibration_data = example_inputs
    graph = fold_batchnorm(mod.graph).graph
    batches = normalize_batches(graph, calibration_data)
    qparams = run_calibration(graph, batches, observer, **observer_options)
    qgraph, layers, vmap = quantize_graph(graph, qparams, per_channel=per_channel, skip=skip)
    verify(qgraph)
    _layer_sqnr(graph, qgraph, batches[0], layers, vmap)
    report = {
        "mode": "int8",
        "observer": observer,
        "per_channel": per_channel,
        "calibration_batches": len(batches),
        "layers": layers,
        "output_sqnr_db": _output_sqnr(graph, qgraph, batches),
        "summary": _summary(layers),
        "float_fallback": [
            {"node": x["node"], "op": x["op"], "reason": x["reason"]}
            for x in layers
            if x["scheme"] == "float-fallback"
        ],
    }
    metadata = mod.metadata.replace(quantization="int8")
    return Module(qgraph, mod.name, metadata), report


def _layer_sqnr(
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


def _output_sqnr(graph: Graph, qgraph: Graph, batches: list[Batch]) -> list[float]:
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


def _summary(layers: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"int8": 0, "pass_through": 0, "fused": 0, "float_fallback": 0}
    for layer in layers:
        scheme = layer["scheme"]
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
