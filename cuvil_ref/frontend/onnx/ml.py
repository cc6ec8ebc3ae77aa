"""Converters for ops of ONNX's ``ai.onnx.ml`` domain on numeric tensors: ``Binarizer`` and
``ArrayFeatureExtractor`` (the domain's string ops -- label and string encoders -- need a
string dtype Cuvil does not have)."""

from __future__ import annotations

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}
ML = "ai.onnx.ml"


@onnx_op(TABLE, "Binarizer", 1, domain=ML)
def binarizer(cx: OnnxContext, node: OnnxNode) -> Value:
    """1 where ``x > threshold``, else 0, in x's type."""
    x = x_of(node)
    dt = x.type.dtype
    above = cx.op("gt", [x, cx.scalar(float(node.attr("threshold", 0.0)), dt)])
    return cx.cast(above, dt)


@onnx_op(TABLE, "ArrayFeatureExtractor", 1, domain=ML)
def array_feature_extractor(cx: OnnxContext, node: OnnxNode) -> Value:
    """The elements at ``indices`` along the last axis (a vector gives a ``[1, k]`` row, as
    ONNX Runtime does)."""
    x, index = node.inputs[0], node.inputs[1]
    assert x is not None and index is not None
    if x.type.rank == 1:
        x = cx.op("unsqueeze", [x], axis=0)
    flat = cx.op("reshape", [cx.cast(index, DType.i64)], shape=(-1,))
    return cx.op("index_select", [x, flat], axis=x.type.rank - 1)


__all__ = ["TABLE"]
