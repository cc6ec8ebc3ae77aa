"""Converters for ONNX ops that make tensors or index them: ``Constant``, ``ConstantOfShape``,
``Shape`` and ``Size`` (folded to constants: Cuvil shapes are static or named symbols), ``Range``,
``EyeLike``, ``Trilu``, ``OneHot``, ``Gather`` (negative indices count from the end),
``GatherElements``, ``GatherND``, ``Compress``.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, select, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}
_LATEST = (21, 23, 24, 25)


@onnx_op(TABLE, "Constant", 1, 9, 11, 12, 13, 19, *_LATEST)
def constant(cx: OnnxContext, node: OnnxNode) -> Value:
    attrs = node.attrs
    if "value" in attrs:
        return cx.constant(attrs["value"], node.name or "constant")
    for key, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in attrs:
            return cx.constant(np.asarray(attrs[key], dtype=dtype), node.name or "constant")
    raise cx.error(f"Constant with attribute {sorted(attrs)} is not supported (strings, sparse)")


@onnx_op(TABLE, "ConstantOfShape", 9, 20, *_LATEST)
def constant_of_shape(cx: OnnxContext, node: OnnxNode) -> Value:
    shape = cx.ints(node.inputs[0], "input")
    value = node.attr("value")
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return cx.constant(np.full(shape, fill[0], dtype=fill.dtype), "constant_of_shape")


@onnx_op(TABLE, "Shape", 1, 13, 15, 19, *_LATEST)
def shape(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    dims = x.type.shape
    rank = len(dims)
    start = int(node.attr("start", 0))
    end = node.attr("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    picked = dims[start:stop]
    if not all(isinstance(d, int) for d in picked):
        raise cx.error(
            f"the input's shape {x.type} has dynamic dims; Cuvil folds Shape to a constant, so "
            "give static input shapes (onnx_to_cuvilir(..., input_shapes=...))"
        )
    return cx.constant(np.asarray(picked, dtype=np.int64), "shape")


@onnx_op(TABLE, "Size", 1, 13, 19, *_LATEST)
def size(cx: OnnxContext, node: OnnxNode) -> Value:
    dims = static_dims(cx, x_of(node), "Size")
    return cx.constant(np.asarray(int(np.prod(dims)), dtype=np.int64), "size")


@onnx_op(TABLE, "Range", 11, 27)
def range_(cx: OnnxContext, node: OnnxNode) -> Value:
    """``start + i * delta`` for ``i < max(ceil((limit - start) / delta), 0)``, in the inputs'
    type."""
    start, limit, delta = (
        cx.static(v, n) for v, n in zip(node.inputs, ("start", "limit", "delta"))
    )
    # one-element tensors (some exporters give [1]) count as the scalars the spec asks for
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in (start, limit, delta))
    dtype = np.asarray(start).dtype
    n = int(max(np.ceil((float(limit) - float(start)) / float(delta)), 0))
    out = (np.asarray(start) + np.arange(n).astype(dtype) * np.asarray(delta)).astype(dtype)
    return cx.constant(out, "range")


@onnx_op(TABLE, "EyeLike", 9, 22)
def eye_like(cx: OnnxContext, node: OnnxNode) -> Value:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    x = x_of(node)
    rows, cols = static_dims(cx, x, "EyeLike")
    dt = x.type.dtype if node.attr("dtype") is None else dtype_of(int(node.attr("dtype")), "dtype")
    return cx.constant(np.eye(rows, cols, k=int(node.attr("k", 0)), dtype=dt.numpy), "eye")


@onnx_op(TABLE, "Trilu", 14)
def trilu(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    dims = static_dims(cx, x, "Trilu")
    k = int(cx.static(node.input(1), "k").reshape(-1)[0]) if node.input(1) is not None else 0
    ones = np.ones(dims[-2:], dtype=bool)
    mask = np.triu(ones, k) if int(node.attr("upper", 1)) else np.tril(ones, k)
    zero = cx.scalar(0, x.type.dtype)
    return cx.op("where", [cx.constant(mask, "trilu_mask"), x, zero])


def _normalized_index(cx: OnnxContext, index: Value, dim: int | str) -> Value:
    """Negative indices count from the end of the indexed dim (ONNX), torch's ops want >= 0."""
    arr = cx.array(index)
    if arr is not None:
        if isinstance(dim, int):
            if arr.size and (arr.min() < -dim or arr.max() >= dim):
                raise cx.error(f"index out of range for a dim of size {dim}")
            arr = np.where(arr < 0, arr + dim, arr)
        return cx.constant(arr.astype(np.int64), "index")
    index = cx.cast(index, DType.i64)
    if not isinstance(dim, int):
        return index
    neg = cx.op("lt", [index, cx.scalar(0, DType.i64)])
    return cx.op("where", [neg, cx.op("add", [index, cx.scalar(dim, DType.i64)]), index])


@onnx_op(TABLE, "Gather", 1, 11, 13)
def gather(cx: OnnxContext, node: OnnxNode) -> Value:
    """``y[i.., j.., k..] = x[i.., index[j..], k..]`` along ``axis``."""
    x, index = node.inputs[0], node.inputs[1]
    assert x is not None and index is not None
    axis = axis_of(int(node.attr("axis", 0)), x.type.rank, cx)
    index = _normalized_index(cx, index, x.type.shape[axis])
    flat = cx.op("reshape", [index], shape=(-1,)) if index.type.rank != 1 else index
    y = cx.op("index_select", [x, flat], axis=axis)
    if index.type.rank == 1:
        return y
    dims = x.type.shape
    out = (*dims[:axis], *index.type.shape, *dims[axis + 1 :])
    return cx.op("reshape", [y], shape=tuple(out))


@onnx_op(TABLE, "GatherElements", 11, 13)
def gather_elements(cx: OnnxContext, node: OnnxNode) -> Value:
    x, index = node.inputs[0], node.inputs[1]
    assert x is not None and index is not None
    axis = axis_of(int(node.attr("axis", 0)), x.type.rank, cx)
    index = _normalized_index(cx, index, x.type.shape[axis])
    return cx.op("gather", [x, index], axis=axis)


@onnx_op(TABLE, "GatherND", 11, 12, 13)
def gather_nd(cx: OnnxContext, node: OnnxNode) -> Value:
    """``y[b.., i..] = x[b.., index[b.., i.., :]]``: the index tuples become one linear index
    into ``x`` reshaped to ``(batch, prod(indexed dims), rest...)``."""
    x, index = node.inputs[0], node.inputs[1]
    assert x is not None and index is not None
    b = int(node.attr("batch_dims", 0))
    dims = static_dims(cx, x, "GatherND")
    idims = static_dims(cx, index, "GatherND")
    k = idims[-1]
    indexed, rest = dims[b : b + k], dims[b + k :]
    strides = np.array([int(np.prod(indexed[j + 1 :])) for j in range(k)], dtype=np.int64)
    index = cx.cast(index, DType.i64)
    size = cx.constant(np.asarray(indexed, dtype=np.int64), "dims")
    neg = cx.op("lt", [index, cx.scalar(0, DType.i64)])
    index = cx.op("where", [neg, cx.op("add", [index, size]), index])
    linear = cx.op("sum", [cx.op("mul", [index, cx.constant(strides, "strides")])], axes=(-1,))
    batch = int(np.prod(dims[:b]))
    # offset each batch's linear index into the flattened (batch * prod(indexed)) rows
    offs = (np.arange(batch, dtype=np.int64) * int(np.prod(indexed))).reshape(
        tuple(dims[:b]) + (1,) * (len(idims) - 1 - b)
    )
    linear = cx.op("add", [linear, cx.constant(offs, "offsets")])
    flat = cx.op("reshape", [x], shape=(batch * int(np.prod(indexed)), *rest))
    y = cx.op("index_select", [flat, cx.op("reshape", [linear], shape=(-1,))], axis=0)
    return cx.op("reshape", [y], shape=(*idims[:-1], *rest))


@onnx_op(TABLE, "Compress", 9, 11)
def compress(cx: OnnxContext, node: OnnxNode) -> Value:
    """The selected slices of ``x`` (a constant condition only: the output size is data)."""
    x = x_of(node)
    cond = cx.static(node.inputs[1], "condition").astype(bool).reshape(-1)
    axis = node.attr("axis")
    if axis is None:
        x = cx.op("reshape", [x], shape=(-1,))
        axis = 0
    axis = axis_of(int(axis), x.type.rank, cx)
    return select(cx, x, axis, np.nonzero(cond)[0])


@onnx_op(TABLE, "OneHot", 9, 11)
def one_hot(cx: OnnxContext, node: OnnxNode) -> Value:
    """``values[1]`` where ``index == class``, else ``values[0]``; negative indices count from
    ``depth``."""
    index, depth_v, values = node.inputs[0], node.inputs[1], node.inputs[2]
    assert index is not None and values is not None
    depth = int(cx.static(depth_v, "depth").reshape(-1)[0])
    rank = index.type.rank + 1
    axis = axis_of(int(node.attr("axis", -1)), rank, cx)
    if index.type.dtype.is_float:
        index = cx.cast(index, DType.i64)  # ONNX truncates float indices
    index = _normalized_index(cx, cx.cast(index, DType.i64), depth)
    shape = [1] * rank
    shape[axis] = depth
    classes = cx.constant(np.arange(depth, dtype=np.int64).reshape(shape), "classes")
    hot = cx.op("eq", [cx.op("unsqueeze", [index], axis=axis), classes])
    off = cx.op("reshape", [cx.op("slice", [values], axis=0, start=0, end=1)], shape=())
    on = cx.op("reshape", [cx.op("slice", [values], axis=0, start=1, end=2)], shape=())
    return cx.op("where", [hot, on, off])


__all__ = ["TABLE"]
