"""Layout optimization: run conv/pool/pointwise regions in NHWC, transposing only at their edges.

Requires: a verified graph (fusion may or may not have run). Ensures: every 4-D ``conv2d`` (with
a constant or absent bias) and ``fused_conv2d`` works in NHWC (``fused_conv2d`` with
``data_layout='NHWC'``); pools and pointwise ops whose tensor inputs are already NHWC stay NHWC
(``*_nhwc`` pools; pointwise ops with their broadcast constants permuted at compile time); every
NHWC value carries ``TensorType.layout == 'NHWC'`` and a physical ``[N, H, W, C]`` shape. A
``permute`` to NHWC is inserted only where an NCHW value enters such a region (a graph input),
and a ``permute`` back only where a layout-sensitive op (reshape, flatten, batch_norm, linear,
anything not listed above) or a graph output reads an NHWC value, once per value; a value that
was itself made by a permute from NHWC is not transposed back again (adjacent inverse permutes
cancel). Results are unchanged: only data movement changes.

Targets choose the layout through ``TargetPreferences.layout``; this reference pass implements
``'NHWC'``; ``None``/``'NCHW'`` and layouts without reference ops (e.g. ``'NCHWc8'``) leave the
graph as it is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ops import families
from cuvil_ref.ops.fused import NHWC_VARIANTS, TO_NCHW, TO_NHWC
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.rewrite import Rewriter, copy_graph_builder, rename_inputs

NHWC = "NHWC"


class _Layouts:
    """The walk's state: each original value's current version and whether it is NHWC."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.b = copy_graph_builder(graph)
        self.constants = dict(graph.constants)
        self.current: dict[str, Value] = {}
        self.nhwc: set[str] = set()
        self.nchw_cache: dict[str, Value] = {}
        self.nhwc_cache: dict[str, Value] = {}
        self.producer: dict[str, Node] = {}
        self.emitted: list[Node] = []

    def rewriter(self, node: Node) -> Rewriter:
        return Rewriter(self.b, node.provenance, self.constants)

    def flush(self, r: Rewriter) -> None:
        for n in r.created:
            self.emitted.append(n)
            self.producer.update({v.name: n for v in n.outputs})

    def as_nchw(self, v: Value, r: Rewriter) -> Value:
        if v.name not in self.nhwc:
            return self.current.get(v.name, v)
        if v.name not in self.nchw_cache:
            self.nchw_cache[v.name] = r.op("permute", [self.current[v.name]], {"perm": TO_NCHW})
        return self.nchw_cache[v.name]

    def as_nhwc(self, v: Value, r: Rewriter) -> Value:
        if v.name in self.nhwc:
            return self.current[v.name]
        src = self.current.get(v.name, v)
        made = self.producer.get(src.name)
        if made is not None and made.op == "permute" and made.attrs["perm"] == TO_NCHW:
            inner = made.inputs[0]
            if inner.type.layout == NHWC:
                return inner  # cancel the inverse pair
        if v.name not in self.nhwc_cache:
            self.nhwc_cache[v.name] = r.op("permute", [src], {"perm": TO_NHWC}, layout=NHWC)
        return self.nhwc_cache[v.name]

    def permuted_constant(self, v: Value, r: Rewriter) -> Value | None:
        array = self.constants[v.name]
        if array.ndim > 4:
            return None
        if array.ndim == 0:
            return v
        full = array.reshape((1,) * (4 - array.ndim) + array.shape)
        return r.constant(v.name + "_nhwc", np.require(full.transpose(TO_NHWC), requirements="C"))


def _conv(st: _Layouts, node: Node, r: Rewriter) -> Value | None:
    if node.inputs[0].type.rank != 4:
        return None
    if node.op == "conv2d":
        if len(node.inputs) > 2 and node.inputs[2].name not in st.constants:
            return None
        weight = node.inputs[1]
        if len(node.inputs) > 2:
            bias = node.inputs[2]
        else:
            zeros = np.zeros((int(weight.type.shape[0]),), dtype=weight.type.dtype.numpy)
            bias = r.constant(weight.name.removesuffix("weight") + "bias_zero", zeros)
        inputs = [st.as_nhwc(node.inputs[0], r), weight, bias]
    else:
        if node.attrs["data_layout"] == NHWC:
            return None
        inputs = [st.as_nhwc(node.inputs[0], r), *node.inputs[1:3]]
        inputs += [st.as_nhwc(v, r) for v in node.inputs[3:]]
    attrs = {**dict(node.attrs), "data_layout": NHWC}
    return r.op("fused_conv2d", inputs, attrs, layout=NHWC)


def _pool(st: _Layouts, node: Node, r: Rewriter) -> Value | None:
    x = node.inputs[0]
    if x.type.rank != 4 or x.name not in st.nhwc:
        return None
    return r.op(NHWC_VARIANTS[node.op], [st.current[x.name]], node.attrs, layout=NHWC)


def _pointwise(st: _Layouts, node: Node, r: Rewriter) -> Value | None:
    from cuvil_ref.ops import get_op

    if not families.is_pointwise(get_op(node.op)) or len(node.outputs) != 1:
        return None
    if node.outputs[0].type.rank != 4:
        return None
    tensors = [v for v in node.inputs if v.name not in st.constants]
    if not tensors or any(v.name not in st.nhwc or v.type.rank != 4 for v in tensors):
        return None
    inputs = []
    for v in node.inputs:
        if v.name in st.constants:
            c = st.permuted_constant(v, r)
            if c is None:
                return None
            inputs.append(c)
        else:
            inputs.append(st.current[v.name])
    return r.op(node.op, inputs, node.attrs, layout=NHWC)


_CONVERTERS: dict[str, Callable[[_Layouts, Node, Rewriter], Value | None]] = {
    "conv2d": _conv,
    "fused_conv2d": _conv,
    **{op: _pool for op in NHWC_VARIANTS},
}


def _to_nhwc(graph: Graph) -> PassResult:
    st = _Layouts(graph)
    changed = False
    for node in graph.nodes:
        r = st.rewriter(node)
        convert = _CONVERTERS.get(node.op, _pointwise)
        value = convert(st, node, r) if len(node.outputs) == 1 else None
        if value is None:
            if r.created:  # a converter that declined after building (it never should)
                st.flush(r)
            inputs = {v.name: st.as_nchw(v, r) for v in node.inputs}
            st.flush(r)
            kept = rename_inputs(node, inputs)
            st.emitted.append(kept)
            st.producer.update({v.name: kept for v in kept.outputs})
            continue
        st.flush(r)
        changed = True
        st.current[node.outputs[0].name] = value
        st.nhwc.add(node.outputs[0].name)
    if not changed:
        return PassResult(graph, False)
    r = Rewriter(st.b, None, st.constants)
    outputs = [st.as_nchw(v, r) for v in graph.outputs]
    st.flush(r)
    return PassResult(Graph(graph.inputs, tuple(st.emitted), tuple(outputs), st.constants), True)


def make_optimize_layout(layout: str | None = NHWC) -> Callable[[Graph], PassResult]:
    """The layout pass for a target's preferred activation layout."""
    if layout != NHWC:
        return lambda graph: PassResult(graph, False)
    return _to_nhwc


def optimize_layout(graph: Graph) -> PassResult:
    """NHWC layout optimization (the default preference)."""
    return _to_nhwc(graph)
