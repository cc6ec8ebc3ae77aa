"""Emitters for the reduction and row-normalization kernels: the ``reduce`` (sum, mean),
``softmax`` (softmax, log_softmax) and ``layer_norm`` template families.

``sum``/``mean`` reduce a contiguous run of axes, viewed as ``(outer, r, inner)``; softmax and
log_softmax take the last axis; layer_norm normalizes the trailing ``normalized_shape`` dims
(a row of ``prod(normalized_shape)`` columns) with both or neither of weight and bias.
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.normalization import NORM_OPS, normalization_source
from cuvil_kernels_hip.kernels.reduction import REDUCE_OPS, reduction_source
from cuvil_kernels_hip.lowerings.common import (
    MAX_GRID_YZ,
    LowerContext,
    f32,
    first_reason,
    float_reason,
    i64,
    numel,
    same_dtype_reason,
    storage,
)
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops.shapes import normalize_axes, normalize_axis
from cuvil_ref.plugin.kit import CheckContext
from cuvil_ref.plugin.kit.templates import Emitter, formula


def _axes(node: Node) -> tuple[int, ...]:
    rank = len(node.inputs[0].type.shape)
    axes = node.attrs["axes"]
    return tuple(range(rank)) if axes is None else tuple(sorted(normalize_axes(axes, rank)))


def check_reduce(node: Node, cx: CheckContext) -> str | None:
    axes = _axes(node)
    if axes and axes != tuple(range(axes[0], axes[-1] + 1)):
        return f"axes {axes} are not contiguous; the hip reduction views x as (outer, r, inner)"
    return first_reason(float_reason(node), same_dtype_reason(node))


def lower_reduce(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    shape = ctx.shape(x)
    axes = _axes(node)
    lo, hi = (axes[0], axes[-1] + 1) if axes else (len(shape), len(shape))
    outer, r, inner = numel(shape[:lo]), numel(shape[lo:hi]), numel(shape[hi:])
    src = reduction_source(formula(node.op), storage(x), ctx.options)
    grid = (max(1, min(outer * inner, MAX_GRID_YZ)), 1, 1)
    args = (x.name, y.name, i64(outer), i64(r), i64(inner))
    ctx.launch(src, grid, (ctx.options.block_size, 1, 1), args)


def check_softmax(node: Node, cx: CheckContext) -> str | None:
    rank = len(node.inputs[0].type.shape)
    if rank == 0 or normalize_axis(node.attrs["axis"], rank) != rank - 1:
        return f"axis {node.attrs['axis']} is not the last axis; the hip kernel normalizes rows"
    return first_reason(float_reason(node), same_dtype_reason(node))


def lower_softmax(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    shape = ctx.shape(x)
    cols = shape[-1]
    rows = numel(shape) // cols if cols else 0
    src = normalization_source(formula(node.op), storage(x), ctx.options)
    grid = (max(1, min(rows, MAX_GRID_YZ)), 1, 1)
    args = (x.name, y.name, i64(rows), i64(cols))
    ctx.launch(src, grid, (ctx.options.block_size, 1, 1), args)


def check_layer_norm(node: Node, cx: CheckContext) -> str | None:
    x = node.inputs[0]
    norm = tuple(node.attrs["normalized_shape"])
    if tuple(x.type.shape[len(x.type.shape) - len(norm) :]) != norm:
        return f"normalized_shape {norm} is not x's trailing dims"
    if len(node.inputs) == 2:
        return "layer_norm with a weight but no bias has no hip kernel (both or neither)"
    return first_reason(float_reason(node, *node.inputs, *node.outputs), same_dtype_reason(node))


def lower_layer_norm(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    cols = numel(tuple(node.attrs["normalized_shape"]))
    rows = numel(ctx.shape(x)) // cols if cols else 0
    affine = len(node.inputs) == 3
    src = normalization_source("layer_norm", storage(x), ctx.options, affine=affine)
    params = (node.inputs[1].name, node.inputs[2].name) if affine else ()
    args = (x.name, *params, y.name, i64(rows), i64(cols), f32(node.attrs["eps"]))
    grid = (max(1, min(rows, MAX_GRID_YZ)), 1, 1)
    ctx.launch(src, grid, (ctx.options.block_size, 1, 1), args)


EMITTERS: dict[str, Emitter] = {
    # the kernel's "max" is not claimed: amax's NaN and -0 rules are not checked against it
    "reduce": Emitter(lower_reduce, check=check_reduce, formulas=frozenset(REDUCE_OPS) - {"max"}),
    "softmax": Emitter(lower_softmax, check=check_softmax, formulas=frozenset(NORM_OPS)),
    "layer_norm": Emitter(lower_layer_norm, check=check_layer_norm),
}
