"""Reduced float precision (``quantize="fp16"`` / ``"bf16"``) as a graph rewrite.

:func:`to_low_precision` re-emits a graph so that the chosen float nodes run on f16/bf16 values:
their float inputs are cast to the low type (float constants are converted once, at compile
time, into new constants), integer and bool values are untouched, and every other node gets f32
inputs back through a cast. Graph outputs are cast back to their original dtype, so the model's
interface does not change. Each op then follows the registry's low-precision rule: it widens its
inputs to f32, computes (conv2d/linear/matmul accumulate in f32; reductions, normalization and
pooling keep f32 statistics and sums) and rounds its result once to the low type
(``docs/semantics.md``, "Reduced float precision"). A control-flow node keeps its float
interface and its regions are rewritten the same way, each keeping its own interface.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Module, Node, Value
from cuvil_ref.ir.verifier import verify
from cuvil_ref.ops import families
from cuvil_ref.passes.dce import eliminate_dead_code

LOW: dict[str, DType] = {"fp16": DType.f16, "bf16": DType.bf16}
PRECISION = {DType.f16: "fp16", DType.bf16: "bf16", DType.f32: "fp32"}
#: Ops that reduce over many products: their accumulator is f32 whatever the storage type.
ACCUMULATING = families.ACCUMULATING
#: Ops kept at their exact dtypes: the int8 boundary (its contract is f32) and integer ops.
FIXED = families.QUANT_BOUNDARY


def _is_float(v: Value) -> bool:
    return v.type.dtype.is_float


class _LowRewriter:
    def __init__(self, graph: Graph, low: DType, selected: Callable[[Node], bool]) -> None:
        self.graph, self.low, self.selected = graph, low, selected
        self.b = GraphBuilder()
        self.env: dict[str, Value] = {}
        self.casts: dict[tuple[str, DType], Value] = {}
        self.layers: list[dict[str, Any]] = []

    def version(self, v: Value, dtype: DType) -> Value:
        """``v`` (an original value) as ``dtype``: a converted constant or a cast, cached."""
        key = (v.name, dtype)
        if key in self.casts:
            return self.casts[key]
        if v.name in self.graph.constants:
            array = np.asarray(self.graph.constants[v.name])
            if array.dtype == dtype.numpy:
                out = self.env[v.name]
            else:
                out = self.b.constant(f"{v.name}.{dtype.value}", array.astype(dtype.numpy))
        else:
            cur = self.env[v.name]
            if cur.type.dtype == dtype:
                return cur
            out = self.b.op("cast", [cur], {"dtype": dtype.value}, name=f"{v.name}_{dtype.value}")
        self.casts[key] = out
        return out

    def run(self) -> Graph:
        for v in self.graph.inputs:
            self.env[v.name] = self.b.add_input(v)
        for name, array in self.graph.constants.items():
            self.env[name] = Value(name, self.b.add_constant(name, array).type)
        for node in self.graph.nodes:
            if node.regions:
                self.control_flow(node)
                continue
            is_float = any(_is_float(v) for v in (*node.inputs, *node.outputs))
            run_low = is_float and node.op not in FIXED and node.op[:1] != "q"
            run_low = run_low and self.selected(node)
            dtype = self.low if run_low else DType.f32
            inputs = [
                self.version(v, dtype) if _is_float(v) else self.env[v.name] for v in node.inputs
            ]
            attrs = dict(node.attrs)
            if run_low and node.op == "cast" and DType(attrs["dtype"]).is_float:
                attrs["dtype"] = self.low.value
            outs = self.b.op_multi(
                node.op,
                inputs,
                attrs,
                name=node.outputs[0].name if len(node.outputs) == 1 else None,
                provenance=node.provenance,
            )
            for old, new in zip(node.outputs, outs, strict=True):
                self.env[old.name] = new
            if is_float:
                self.layers.append(_layer(node, outs, dtype if node.op not in FIXED else None))
        outputs = [
            self.version(v, v.type.dtype) if _is_float(v) else self.env[v.name]
            for v in self.graph.outputs
        ]
        return self.b.build(outputs)

    def control_flow(self, node: Node) -> None:
        """Operands and results at their own dtypes; every region rewritten on its own."""
        regions = []
        for region in node.regions:
            inner = _LowRewriter(region, self.low, self.selected)
            regions.append(eliminate_dead_code(inner.run()).graph)
            self.layers.extend(inner.layers)
        inputs = [self.version(v, v.type.dtype) if _is_float(v) else self.env[v.name]
                  for v in node.inputs]  # fmt: skip
        outs = self.b.op_multi(
            node.op,
            inputs,
            node.attrs,
            name=node.outputs[0].name,
            provenance=node.provenance,
            regions=regions,
        )
        for old, new in zip(node.outputs, outs, strict=True):
            self.env[old.name] = new


def _layer(node: Node, outs: tuple[Value, ...], dtype: DType | None) -> dict[str, Any]:
    precision = "int8" if dtype is None or node.op[:1] == "q" else PRECISION[dtype]
    return {
        "node": node.outputs[0].name,
        "op": node.op,
        "precision": precision,
        "dtype": outs[0].type.dtype.value,
        "accumulate": "f32" if node.op in ACCUMULATING and precision != "int8" else None,
    }


def to_low_precision(
    graph: Graph, dtype: DType | str, *, nodes: Collection[str] | None = None
) -> tuple[Graph, list[dict[str, Any]]]:
    """Run float nodes in ``dtype`` (f16 or bf16): all of them, or those whose first output is
    named in ``nodes``. Returns the new graph and one report entry per float node
    (``precision``, storage ``dtype``, ``accumulate``)."""
    low = LOW.get(dtype, dtype) if isinstance(dtype, str) else dtype
    if not isinstance(low, DType) or low not in (DType.f16, DType.bf16):
        low = DType(low) if isinstance(low, str) and low in ("f16", "bf16") else None
    if low is None:
        raise QuantizationError(f"to_low_precision: dtype {dtype!r} is not fp16/f16 or bf16")
    chosen = None if nodes is None else set(nodes)
    rw = _LowRewriter(graph, low, lambda n: chosen is None or n.outputs[0].name in chosen)
    new = eliminate_dead_code(rw.run()).graph  # drops the f32 originals of converted constants
    verify(new)
    return new, rw.layers


def quantize_lowp(
    module: Module, mode: str, calibration_data: Any = None, *, example_inputs: Any = None
) -> tuple[Module, dict[str, Any]]:
    """``quantize="fp16"``/``"bf16"``: fold batch norms, run every float op in the low type.

    No calibration is needed; given data (or example inputs), the report carries the output
    SQNR against fp32.
    """
    from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
    from cuvil_ref.quant.calibrate import normalize_batches
    from cuvil_ref.quant.report import output_sqnr

    if mode not in LOW:
        raise QuantizationError(f"quantize_lowp: mode {mode!r} is not one of {list(LOW)}")
    from cuvil_ref.passes.regions import in_regions

    graph = in_regions(fold_batchnorm)(module.graph).graph
    new, layers = to_low_precision(graph, LOW[mode])
    data = calibration_data if calibration_data is not None else example_inputs
    sqnr = None
    if data is not None:
        sqnr = output_sqnr(graph, new, normalize_batches(graph, data))
    counts: dict[str, int] = {}
    for layer in layers:
        counts[layer["precision"]] = counts.get(layer["precision"], 0) + 1
    report = {
        "mode": mode,
        "dtype": LOW[mode].value,
        "layers": layers,
        "summary": counts,
        "output_sqnr_db": sqnr,
        "float_fallback": [],
    }
    return Module(new, module.name, module.metadata.replace(quantization=mode)), report
