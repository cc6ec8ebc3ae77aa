"""Converters for ONNX's reductions: ``Reduce*`` (``axes`` an attribute before version 18 --
13 for ``ReduceSum`` -- and an input after; ``noop_with_empty_axes``), ``ArgMax``/``ArgMin``
(``select_last_index``) and ``TopK`` (``largest``, ``sorted``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, select, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _reduce_axes(cx: OnnxContext, node: OnnxNode, input_from: int) -> tuple[int, ...] | None:
    """The normalized axes, or None for 'all axes'; () means 'nothing' (noop_with_empty_axes)."""
    x = x_of(node)
    if node.version >= input_from:
        v = node.input(1)
        axes = None if v is None else cx.ints(v, "axes")
    else:
        a = node.attr("axes")
        axes = None if a is None else [int(i) for i in a]
    if not axes:
        return () if int(node.attr("noop_with_empty_axes", 0)) else None
    return tuple(sorted({axis_of(a, x.type.rank, cx) for a in axes}))


def _reduction(kind: str, input_from: int):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        x = x_of(node)
        axes = _reduce_axes(cx, node, input_from)
        keep = bool(int(node.attr("keepdims", 1)))
        dt = x.type.dtype
        if axes == ():
            # nothing to reduce: ONNX still applies the elementwise part (|x|, x^2, ...)
            return {
                "l1": lambda: cx.op("abs", [x]),
                "l2": lambda: cx.op("abs", [x]),
                "sumsquare": lambda: cx.op("mul", [x, x]),
                "logsum": lambda: cx.op("log", [x]),
                "logsumexp": lambda: x,
            }.get(kind, lambda: x)()
        if axes is None:
            axes = tuple(range(x.type.rank))
        attrs = {"axes": axes, "keepdim": keep}
        if any(x.type.shape[a] == 0 for a in axes):
            return _empty(cx, x, kind, axes, keep)

        def total(v: Value) -> Value:
            s = cx.op("sum", [v], **attrs)
            return cx.cast(s, dt)  # ints and bools sum in i64 in the IR; ONNX keeps the type

        if kind == "sum":
            return total(x)
        if kind == "mean":
            return cx.op("mean", [x], **attrs) if dt.is_float else _int_mean(cx, x, attrs)
        if kind in ("max", "min"):
            return cx.op("amax" if kind == "max" else "amin", [x], **attrs)
        if kind == "prod":
            return cx.cast(cx.op("prod", [x], **attrs), dt)
        if kind == "l1":
            return total(cx.op("abs", [x]))
        if kind == "sumsquare":
            return total(cx.op("mul", [x, x]))
        if kind == "l2":
            if not dt.is_float:
                xf = cx.cast(x, DType.f64)
                return cx.cast(cx.op("sqrt", [cx.op("sum", [cx.op("mul", [xf, xf])], **attrs)]), dt)
            return cx.op("sqrt", [total(cx.op("mul", [x, x]))])
        if kind == "logsum":
            return cx.op("log", [total(x)])
        # logsumexp, stably: m + log(sum(exp(x - m)))
        m = cx.op("amax", [x], axes=axes, keepdim=True)
        inf = cx.op("eq", [cx.op("abs", [m]), cx.scalar(np.inf, dt)])
        finite = cx.op("where", [inf, cx.scalar(0, dt), m])
        s = cx.op("sum", [cx.op("exp", [cx.op("sub", [x, finite])])], **attrs)
        shift = finite if keep else cx.op("squeeze", [finite], axes=axes)
        return cx.op("add", [cx.op("log", [s]), shift])

    return convert


def _empty(cx: OnnxContext, x: Value, kind: str, axes: tuple[int, ...], keep: bool) -> Value:
    """A reduction over no elements: ONNX's identity values (max: the lowest value, min: the
    highest, prod: 1, logsum and logsumexp: -inf, the sums: 0)."""
    dt = x.type.dtype.numpy
    dims = static_dims(cx, x, "an empty reduction")
    shape = [1 if a in axes else d for a, d in enumerate(dims) if keep or a not in axes]
    low = -np.inf if x.type.dtype.is_float else np.iinfo(dt).min
    high = np.inf if x.type.dtype.is_float else np.iinfo(dt).max
    fill = {"max": low, "min": high, "prod": 1, "logsum": -np.inf, "logsumexp": -np.inf}
    return cx.constant(np.full(shape, fill.get(kind, 0), dtype=dt), "empty_reduction")


def _int_mean(cx: OnnxContext, x: Value, attrs: dict) -> Value:  # type: ignore[type-arg]
    s = cx.op("sum", [x], **attrs)
    n = int(np.prod([x.type.shape[a] for a in attrs["axes"]]))  # type: ignore[misc]
    return cx.cast(cx.op("trunc_divide", [s, cx.scalar(n, s.type.dtype)]), x.type.dtype)


for _name, _kind, _versions, _from in [
    ("ReduceSum", "sum", (1, 11, 13), 13),
    ("ReduceMean", "mean", (1, 11, 13, 18), 18),
    ("ReduceMax", "max", (1, 11, 12, 13, 18, 20), 18),
    ("ReduceMin", "min", (1, 11, 12, 13, 18, 20), 18),
    ("ReduceProd", "prod", (1, 11, 13, 18), 18),
    ("ReduceL1", "l1", (1, 11, 13, 18), 18),
    ("ReduceL2", "l2", (1, 11, 13, 18), 18),
    ("ReduceSumSquare", "sumsquare", (1, 11, 13, 18), 18),
    ("ReduceLogSum", "logsum", (1, 11, 13, 18), 18),
    ("ReduceLogSumExp", "logsumexp", (1, 11, 13, 18), 18),
]:
    onnx_op(TABLE, _name, *_versions)(_reduction(_kind, _from))


def _arg(ir_op: str):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        x = x_of(node)
        axis = axis_of(int(node.attr("axis", 0)), x.type.rank, cx)
        keep = bool(int(node.attr("keepdims", 1)))
        if not int(node.attr("select_last_index", 0)):
            return cx.op(ir_op, [x], axis=axis, keepdim=keep)
        # the last extreme: search the reversed axis, then count back from the end
        n = static_dims(cx, x, "select_last_index")[axis]
        rev = select(cx, x, axis, np.arange(n - 1, -1, -1))
        idx = cx.op(ir_op, [rev], axis=axis, keepdim=keep)
        return cx.op("sub", [cx.scalar(n - 1, DType.i64), idx])

    return convert


onnx_op(TABLE, "ArgMax", 1, 11, 12, 13)(_arg("argmax"))
onnx_op(TABLE, "ArgMin", 1, 11, 12, 13)(_arg("argmin"))


@onnx_op(TABLE, "TopK", 1, 10, 11, 24)
def topk(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    x = x_of(node)
    k = int(node.attr("k")) if node.version < 10 else cx.ints(node.inputs[1], "K")[0]
    axis = axis_of(int(node.attr("axis", -1)), x.type.rank, cx)
    if int(node.attr("largest", 1)):
        values, indices = cx.op_multi("topk", [x], k=k, axis=axis)
        return [values, indices]
    if not x.type.dtype.is_float and x.type.dtype not in (
        DType.i32,
        DType.i64,
        DType.i16,
        DType.i8,
    ):
        raise cx.error(f"TopK largest=0 on {x.type.dtype.value} is not supported")
    values, indices = cx.op_multi("topk", [cx.op("neg", [x])], k=k, axis=axis)
    return [cx.op("neg", [values]), indices]


__all__ = ["TABLE"]
