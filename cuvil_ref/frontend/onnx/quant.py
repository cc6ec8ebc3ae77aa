"""Converters for ONNX's quantization ops: ``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``, ``MatMulInteger``, ``QLinearMatMul``.

ONNX's rules, written out with IR ops: ``QuantizeLinear`` is
``saturate(round_half_to_even(x / scale) + zero_point)`` in the zero point's type (``uint8``
when there is none), with one scale per tensor or one per slice along ``axis``;
``DequantizeLinear`` is ``(x - zero_point) * scale`` in the scale's type.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}
_LATEST = (21, 23, 24, 25)


def _per_axis(cx: OnnxContext, node: OnnxNode, x: Value, p: Value | None) -> Value | None:
    """A scale or zero point shaped to broadcast against ``x``: per tensor (one element), per
    axis (1-D along ``axis``) or blocked (``block_size`` consecutive elements along ``axis``
    share one entry). Storage-typed zero points (int4, float8...) are widened to f32 first."""
    if p is None:
        return None
    if p.type.dtype.is_storage:
        p = cx.cast(p, DType.f32)
    if p.type.rank == 0:
        return p
    if p.type.rank == 1 and p.type.shape[0] == 1:
        return cx.op("reshape", [p], shape=())
    axis = axis_of(int(node.attr("axis", 1)), x.type.rank, cx)
    block = int(node.attr("block_size", 0))
    if block:
        if p.type.rank != x.type.rank:
            raise cx.error(f"blocked parameters of shape {p.type} for an input {x.type}")
        n = int(static_dims(cx, x, "blocked quantization")[axis])
        last = int(static_dims(cx, p, "blocked quantization")[axis]) - 1
        index = np.minimum(np.arange(n) // block, last).astype(np.int64)
        return cx.op("index_select", [p, cx.constant(index, "blocks")], axis=axis)
    if p.type.rank != 1:
        raise cx.error(f"a scale or zero point of shape {p.type} is not per-tensor or per-axis")
    shape = [1] * x.type.rank
    shape[axis] = p.type.shape[0]  # type: ignore[call-overload]
    return cx.op("reshape", [p], shape=tuple(shape))


def _round_half_even(cx: OnnxContext, v: Value) -> Value:
    if "round" not in cx_ops():
        raise cx.error("QuantizeLinear needs the IR op 'round' (half to even), not registered")
    return cx.op("round", [v])


def cx_ops() -> set[str]:
    from cuvil_ref.ops import REGISTRY

    return set(REGISTRY.names())


def quantize(
    cx: OnnxContext, x: Value, scale: Value, zp: Value | None, out: DType, saturate: bool = True
) -> Value:
    """``saturate(rint(x / scale) + zp)`` in ``out``; the arithmetic in f32 (ONNX's). To a
    float8/float4 type there is no rounding step: the cast rounds to nearest even (and
    ``saturate`` clamps to the format's largest value first)."""
    xf = cx.cast(x, DType.f32)
    if out.is_float:
        q = cx.op("div", [xf, cx.cast(scale, DType.f32)])
        if zp is not None:
            q = cx.op("add", [q, cx.cast(zp, DType.f32)])
        if saturate:
            top = float(ml_dtypes.finfo(out.numpy).max)
            q = cx.op("clamp", [q], min=-top, max=top)
        return cx.cast(q, out)
    info = ml_dtypes.iinfo(out.numpy)
    q = _round_half_even(cx, cx.op("div", [xf, cx.cast(scale, DType.f32)]))
    if zp is not None:
        q = cx.op("add", [q, cx.cast(zp, DType.f32)])
    q = cx.op("clamp", [q], min=float(info.min), max=float(info.max))
    return cx.cast(q, out)


@onnx_op(TABLE, "QuantizeLinear", 10, 13, 19, *_LATEST)
def quantize_linear(cx: OnnxContext, node: OnnxNode) -> Value:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and scale is not None
    out = zp.type.dtype if zp is not None else DType.u8
    if zp is not None and out.is_float:
        zp = cx.cast(zp, DType.f32)  # a float8 zero point: added before the saturating cast
    if node.attr("output_dtype"):
        out = dtype_of(int(node.attr("output_dtype")), "output_dtype")
    if out.is_float and not out.is_storage or out == DType.f8e8m0:
        raise cx.error(f"QuantizeLinear to {out.value} is not supported")
    scale = _per_axis(cx, node, x, scale)
    zp = _per_axis(cx, node, x, zp)
    assert scale is not None
    return quantize(cx, x, scale, zp, out, bool(int(node.attr("saturate", 1))))


@onnx_op(TABLE, "DequantizeLinear", 10, 13, 19, *_LATEST)
def dequantize_linear(cx: OnnxContext, node: OnnxNode) -> Value:
    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    assert x is not None and scale is not None
    scale = _per_axis(cx, node, x, scale)
    zp = _per_axis(cx, node, x, zp)
    assert scale is not None
    xf = cx.cast(x, DType.f32)
    if zp is not None:
        xf = cx.op("sub", [xf, cx.cast(zp, DType.f32)])
    y = cx.op("mul", [xf, cx.cast(scale, DType.f32)])
    return cx.cast(y, scale.type.dtype)


@onnx_op(TABLE, "DynamicQuantizeLinear", 11)
def dynamic_quantize_linear(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """uint8 with ``scale = (max(0, max x) - min(0, min x)) / 255`` and
    ``zero_point = saturate(rint(-min(0, min x) / scale))``."""
    x = x_of(node)
    zero = cx.scalar(0.0, DType.f32)
    hi = cx.op("maximum", [cx.op("amax", [x]), zero])
    lo = cx.op("minimum", [cx.op("amin", [x]), zero])
    scale = cx.op("div", [cx.op("sub", [hi, lo]), cx.scalar(255.0, DType.f32)])
    zpf = _round_half_even(cx, cx.op("div", [cx.op("neg", [lo]), scale]))
    zp = cx.cast(cx.op("clamp", [zpf], min=0.0, max=255.0), DType.u8)
    return [quantize(cx, x, scale, zp, DType.u8), scale, zp]


def _centered(cx: OnnxContext, v: Value, zp: Value | None, axis_from_end: int) -> Value:
    vi = cx.cast(v, DType.i32)
    if zp is None:
        return vi
    zpi = cx.cast(zp, DType.i32)
    if zpi.type.rank == 1 and zpi.type.shape[0] != 1:
        shape = [1] * v.type.rank
        shape[v.type.rank - axis_from_end] = zpi.type.shape[0]  # type: ignore[call-overload]
        zpi = cx.op("reshape", [zpi], shape=tuple(shape))
    return cx.op("sub", [vi, zpi])


@onnx_op(TABLE, "MatMulInteger", 10)
def matmul_integer(cx: OnnxContext, node: OnnxNode) -> Value:
    """``(a - a_zero_point) @ (b - b_zero_point)`` exactly, in int32 (per-row / per-column zero
    points broadcast along M of ``a`` and N of ``b``)."""
    a, b = node.inputs[0], node.inputs[1]
    assert a is not None and b is not None
    return cx.op("matmul", [_centered(cx, a, node.input(2), 2), _centered(cx, b, node.input(3), 1)])


@onnx_op(TABLE, "QLinearMatMul", 10, 21)
def qlinear_matmul(cx: OnnxContext, node: OnnxNode) -> Value:
    """``quantize(dequantize(a) @ dequantize(b))`` with the output's scale and zero point."""
    a, asc, azp, b, bsc, bzp, ysc, yzp = node.inputs[:8]
    assert a is not None and b is not None and asc is not None and bsc is not None
    assert ysc is not None and yzp is not None
    da = cx.op("mul", [cx.cast(_centered(cx, a, azp, 2), DType.f32), cx.cast(asc, DType.f32)])
    db = cx.op("mul", [cx.cast(_centered(cx, b, bzp, 1), DType.f32), cx.cast(bsc, DType.f32)])
    return quantize(cx, cx.op("matmul", [da, db]), ysc, yzp, yzp.type.dtype)


__all__ = ["TABLE", "quantize"]
