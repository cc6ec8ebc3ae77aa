"""``quantize_module``: post-training int8 quantization of an IR module, with a report.

Pipeline: fold batch norms into convs (the ``fold_batchnorm`` pass), calibrate every float
activation on the calibration batches with the reference interpreter
(:mod:`cuvil_ref.quant.calibrate`), rewrite into integer ops (:mod:`cuvil_ref.quant.ptq`),
verify, then measure: per-layer SQNR against fp32 on the first calibration batch and the output
SQNR over all calibration batches. Regions of control-flow ops are quantized first, each by the
same procedure on the inputs it received (:mod:`cuvil_ref.quant.regions`).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import Any

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.ir.verifier import verify
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from cuvil_ref.passes.regions import in_regions
from cuvil_ref.quant.calibrate import (
    OBSERVERS,
    Batch,
    normalize_batches,
)
from cuvil_ref.quant.calibrate import calibrate as run_calibration
from cuvil_ref.quant.ptq import quantize_graph
from cuvil_ref.quant.regions import attach, quantize_regions
from cuvil_ref.quant.report import float_fallback, layer_sqnr, output_sqnr, summary

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
    with its own scales (:mod:`cuvil_ref.quant.qdq`).

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
    from cuvil_ref.quant.qdq import has_qdq, lower_qdq

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
    graph = in_regions(fold_batchnorm)(mod.graph).graph
    batches = normalize_batches(graph, calibration_data)

    def int8(
        g: Graph, data: list[Batch], region: bool = False
    ) -> tuple[Graph, list[dict[str, Any]]]:
        g, regions = quantize_regions(g, data, lambda r, d: int8(r, d, region=True))
        qparams = run_calibration(g, data, observer, lenient=region, **observer_options)
        qg, layers, vmap = quantize_graph(g, qparams, per_channel=per_channel, skip=skip)
        verify(qg)
        layer_sqnr(g, qg, data[0], layers, vmap)
        attach(layers, regions)
        return qg, layers

    qgraph, layers = int8(graph, batches)
    report = {
        "mode": "int8",
        "observer": observer,
        "per_channel": per_channel,
        "calibration_batches": len(batches),
        "layers": layers,
        "output_sqnr_db": output_sqnr(graph, qgraph, batches),
        "summary": summary(layers),
        "float_fallback": float_fallback(layers),
    }
    metadata = mod.metadata.replace(quantization="int8")
    return Module(qgraph, mod.name, metadata), report
