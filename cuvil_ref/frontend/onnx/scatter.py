"""Converters for ONNX's scatters and samplers: ``ScatterElements`` (and the older ``Scatter``),
``ScatterND`` (every ``reduction``), ``CumSum`` and ``CumProd`` (``exclusive``, ``reverse``),
``TensorScatter`` (the KV-cache write) and ``GridSample`` (2-D). The scatters and GridSample are
claimed only when the IR op they lower to (``scatter``, ``grid_sample``) is registered.

``ScatterND`` scatters slices: its first ``k`` data dims are flattened into one, each index
tuple becomes a flat row number, and the slices are scattered as rows by the IR's ``scatter``
along axis 0 -- which gives ONNX's ``add``/``mul``/``max``/``min`` reductions for free.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops import REGISTRY

TABLE: dict[str, OnnxConverter] = {}

#: ONNX ``reduction`` -> the IR scatter's ``reduce``.
REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _reduction(cx: OnnxContext, node: OnnxNode) -> str:
    name = str(node.attr("reduction", "none"))
    if name not in REDUCTIONS:
        raise cx.error(f"reduction {name!r} is not one of {', '.join(REDUCTIONS)}")
    return REDUCTIONS[name]


def _wrapped(cx: OnnxContext, index: Value, size: int) -> Value:
    """Indices as i64 with ONNX's negative ones (counted from the end) made positive."""
    index = cx.cast(index, DType.i64)
    negative = cx.op("lt", [index, cx.scalar(0, DType.i64)])
    return cx.op("where", [negative, cx.op("add", [index, cx.scalar(size, DType.i64)]), index])


def _scatter_elements(cx: OnnxContext, node: OnnxNode) -> Value:
    x, index, updates = node.inputs[0], node.inputs[1], node.inputs[2]
    assert x is not None and index is not None and updates is not None
    axis = axis_of(int(node.attr("axis", 0)), x.type.rank, cx)
    size = static_dims(cx, x, node.op_type)[axis]
    return cx.op(
        "scatter",
        [x, _wrapped(cx, index, size), updates],
        axis=axis,
        reduce=_reduction(cx, node),
    )


@onnx_op(TABLE, "ScatterND", 11, 13, 16, 18)
def scatter_nd(cx: OnnxContext, node: OnnxNode) -> Value:
    x, index, updates = node.inputs[0], node.inputs[1], node.inputs[2]
    assert x is not None and index is not None and updates is not None
    dims = static_dims(cx, x, "ScatterND")
    idims = static_dims(cx, index, "ScatterND")
    k = idims[-1]
    rows, rest = int(np.prod(dims[:k])), int(np.prod(dims[k:]))
    batch = int(np.prod(idims[:-1]))
    strides = np.array([int(np.prod(dims[i + 1 : k])) for i in range(k)], dtype=np.int64)
    index = cx.cast(index, DType.i64)
    negative = cx.op("lt", [index, cx.scalar(0, DType.i64)])
    sizes = cx.constant(np.array(dims[:k], dtype=np.int64), "sizes")
    index = cx.op("where", [negative, cx.op("add", [index, sizes]), index])
    flat = cx.op("sum", [cx.op("mul", [index, cx.constant(strides, "strides")])], axes=(-1,))
    flat = cx.op("reshape", [flat], shape=(batch, 1))
    flat = cx.op("expand", [flat], shape=(batch, rest))
    y = cx.op(
        "scatter",
        [
            cx.op("reshape", [x], shape=(rows, rest)),
            flat,
            cx.op("reshape", [updates], shape=(batch, rest)),
        ],
        axis=0,
        reduce=_reduction(cx, node),
    )
    return cx.op("reshape", [y], shape=dims)


#: Longest axis CumSum (without the IR's cumsum) and CumProd are built for slice by slice.
PREFIX_LIMIT = 4096


def _prefix(cx: OnnxContext, node: OnnxNode, combine: str, identity: float) -> Value:
    """Running ``combine`` (add or mul) along ``axis`` (an input), one slice at a time:
    ``reverse`` runs from the end, ``exclusive`` leaves each element out of its own result
    (the first result is the identity). Each partial result is rounded to the input's type,
    as ONNX's reference computes it."""
    x = x_of(node)
    axis = axis_of(cx.ints(node.input(1), "axis")[0], x.type.rank, cx)
    reverse, exclusive = bool(node.attr("reverse", 0)), bool(node.attr("exclusive", 0))
    n = static_dims(cx, x, node.op_type)[axis]
    if n > PREFIX_LIMIT:
        raise cx.error(f"{node.op_type} along {n} elements: Cuvil builds at most {PREFIX_LIMIT}")
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    pieces = {i: cx.op("slice", [x], axis=axis, start=i, end=i + 1) for i in order}
    results: dict[int, Value] = {}
    acc: Value | None = None
    for i in order:
        if exclusive:
            shape = list(pieces[i].type.shape)
            results[i] = (
                acc
                if acc is not None
                else cx.constant(np.full(shape, identity, dtype=x.type.dtype.numpy), "identity")
            )
        acc = pieces[i] if acc is None else cx.op(combine, [acc, pieces[i]])
        if not exclusive:
            results[i] = acc
    if n == 0:
        return x
    parts = [results[i] for i in range(n)]
    return parts[0] if n == 1 else cx.op("concat", parts, axis=axis)


@onnx_op(TABLE, "CumSum", 11, 14)
def cumsum(cx: OnnxContext, node: OnnxNode) -> Value:
    """Running sums; the result keeps the input's element type, as ONNX says (the IR's integer
    cumsum is i64, cast back). Without the IR's ``cumsum`` and ``flip``, slice by slice."""
    if "cumsum" not in REGISTRY or "flip" not in REGISTRY:
        return _prefix(cx, node, "add", 0)
    x = x_of(node)
    axis = axis_of(cx.ints(node.input(1), "axis")[0], x.type.rank, cx)
    reverse, exclusive = bool(node.attr("reverse", 0)), bool(node.attr("exclusive", 0))
    y = cx.op("flip", [x], axes=(axis,)) if reverse else x
    if exclusive:  # shift by one along axis: a zero in front, the last element dropped
        n = static_dims(cx, y, "CumSum exclusive")[axis]
        pads = [0] * (2 * (x.type.rank - axis))
        pads[-2] = 1
        y = cx.op("pad", [y], pads=tuple(pads), value=0.0)
        y = cx.op("slice", [y], axis=axis, start=0, end=n)
    y = cx.cast(cx.op("cumsum", [y], axis=axis), x.type.dtype)
    return cx.op("flip", [y], axes=(axis,)) if reverse else y


@onnx_op(TABLE, "CumProd", 26)
def cumprod(cx: OnnxContext, node: OnnxNode) -> Value:
    """Running products, slice by slice (integers wrap as ONNX's reference does)."""
    return _prefix(cx, node, "mul", 1)


@onnx_op(TABLE, "TensorScatter", 24)
def tensor_scatter(cx: OnnxContext, node: OnnxNode) -> Value:
    """The KV-cache update: ``update``'s ``L`` positions along ``axis`` written into the cache
    from ``write_indices[b]`` on (modulo the cache length with ``mode="circular"``). Built as a
    gather from ``update`` at ``j = p - w[b]`` and a select where ``0 <= j < L``."""
    past, update = node.inputs[0], node.inputs[1]
    assert past is not None and update is not None
    writes = node.input(2)
    rank = past.type.rank
    axis = axis_of(int(node.attr("axis", -2)), rank, cx)
    if axis == 0:
        raise cx.error("TensorScatter along the batch axis (0) is not defined")
    dims = static_dims(cx, past, "TensorScatter")
    size, length = dims[axis], static_dims(cx, update, "TensorScatter")[axis]
    mode = str(node.attr("mode", "linear"))
    if mode not in ("linear", "circular"):
        raise cx.error(f"TensorScatter mode {mode!r} is not linear or circular")
    shape = [1] * rank
    shape[axis] = size
    p = cx.constant(np.arange(size, dtype=np.int64).reshape(shape), "positions")
    if writes is None:
        j = p
    else:
        bshape = [1] * rank
        bshape[0] = dims[0]
        w = cx.op("reshape", [cx.cast(writes, DType.i64)], shape=tuple(bshape))
        j = cx.op("sub", [p, w])
        if mode == "circular":
            if "remainder" not in REGISTRY:
                raise cx.error("TensorScatter mode='circular' needs the IR op 'remainder'")
            j = cx.op("remainder", [j, cx.scalar(size, DType.i64)])
    inside = cx.op(
        "logical_and",
        [cx.op("ge", [j, cx.scalar(0, DType.i64)]), cx.op("lt", [j, cx.scalar(length, DType.i64)])],
    )
    index = cx.op("clamp", [j], min=0.0, max=float(length - 1))
    index = cx.op("expand", [index], shape=dims)
    taken = cx.op("gather", [update, index], axis=axis)
    return cx.op("where", [cx.op("expand", [inside], shape=dims), taken, past])


#: ONNX GridSample's modes (16 spells the IR's names, 20 renamed them) -> the IR's names.
GRID_MODES = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest"}
GRID_MODES |= {"bicubic": "bicubic", "cubic": "bicubic"}


@onnx_op(TABLE, "GridSample", 16, 20, 22)
def grid_sample(cx: OnnxContext, node: OnnxNode) -> Value:
    x, grid = node.inputs[0], node.inputs[1]
    assert x is not None and grid is not None
    if x.type.rank != 4:
        raise cx.error(f"GridSample over {x.type.rank - 2} spatial dims: Cuvil's IR samples 2-D")
    mode = str(node.attr("mode", "bilinear" if node.version < 20 else "linear"))
    if mode not in GRID_MODES:
        raise cx.error(f"GridSample mode {mode!r} is not one of {', '.join(GRID_MODES)}")
    return cx.op(
        "grid_sample",
        [x, grid],
        mode=GRID_MODES[mode],
        padding_mode=str(node.attr("padding_mode", "zeros")),
        align_corners=bool(int(node.attr("align_corners", 0))),
    )


def _claim_if_registered() -> None:
    """Drop the converters whose IR op is not in this installation's registry."""
    needs = {
        "ScatterND": ("scatter",),
        "GridSample": ("grid_sample",),
    }
    for onnx_name, ir_ops in needs.items():
        if not all(op in REGISTRY for op in ir_ops):
            del TABLE[onnx_name]
    if "scatter" in REGISTRY:
        onnx_op(TABLE, "ScatterElements", 11, 13, 16, 18)(_scatter_elements)
        onnx_op(TABLE, "Scatter", 9, 11)(_scatter_elements)


_claim_if_registered()

__all__ = ["TABLE"]
