"""Converters for ONNX's shape and data-movement ops: ``Reshape`` (``0`` copies a dim unless
``allowzero``), ``Flatten`` (always to 2-D), ``Squeeze``/``Unsqueeze`` (axes an attribute before
version 13, an input from 13), ``Transpose``, ``Concat``, ``Split`` (sizes an input from 13,
``num_outputs`` from 18), ``Slice`` (any step, ONNX/Python clamping), ``Expand`` (bidirectional
broadcasting, unlike torch's), ``Tile``, ``Pad`` (constant, reflect, edge, wrap; ``axes`` from
18), ``DepthToSpace``/``SpaceToDepth``.

Index arithmetic that depends on sizes only (reflect padding, negative-step slices) is done here
in numpy and becomes a constant index for ``index_select``: exact, and the same on every target.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value
from cuvil_ref.ir.types import Dim

TABLE: dict[str, OnnxConverter] = {}
_LATEST = (21, 23, 24, 25)  # versions that only added element types


def x_of(node: OnnxNode) -> Value:
    x = node.inputs[0]
    assert x is not None
    return x


def axis_of(axis: int, rank: int, cx: OnnxContext) -> int:
    if not -rank <= axis < max(rank, 1):
        raise cx.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def static_dims(cx: OnnxContext, x: Value, what: str) -> tuple[int, ...]:
    if not x.type.is_static:
        raise cx.error(
            f"{what} needs static sizes, but the input is {x.type}; give the model static input "
            "shapes (onnx_to_cuvilir(..., input_shapes=...))"
        )
    return tuple(int(d) for d in x.type.shape)


def select(cx: OnnxContext, x: Value, axis: int, index: np.ndarray) -> Value:
    """``x`` with dim ``axis`` replaced by ``x[..., index[k], ...]`` (a constant index)."""
    return cx.op(
        "index_select", [x, cx.constant(np.asarray(index, dtype=np.int64), "index")], axis=axis
    )


@onnx_op(TABLE, "Reshape", 5, 13, 14, 19, *_LATEST)
def reshape(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    shape: list[Dim] = list(cx.ints(node.inputs[1], "shape"))
    allowzero = int(node.attr("allowzero", 0))
    if allowzero and 0 in shape and -1 in shape:
        raise cx.error("allowzero=1 with both 0 and -1 in the shape is invalid (ONNX spec)")
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= x.type.rank:
                raise cx.error(
                    f"shape {shape} copies dim {i}, but the input has rank {x.type.rank}"
                )
            shape[i] = x.type.shape[i]
    return cx.op("reshape", [x], shape=tuple(shape))


@onnx_op(TABLE, "Flatten", 1, 9, 11, 13, *_LATEST)
def flatten(cx: OnnxContext, node: OnnxNode) -> Value:
    """To 2-D: ``(prod(dims[:axis]), prod(dims[axis:]))``."""
    x = x_of(node)
    rank = x.type.rank
    axis = int(node.attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise cx.error(f"axis {node.attr('axis')} is out of range for rank {rank}")
    if axis == 0:
        return cx.op("unsqueeze", [cx.op("reshape", [x], shape=(-1,))], axis=0)
    if axis == rank:
        return cx.op("unsqueeze", [cx.op("reshape", [x], shape=(-1,))], axis=1)
    y = cx.op("flatten", [x], start_dim=axis, end_dim=-1)
    return cx.op("flatten", [y], start_dim=0, end_dim=axis - 1)


def _axes(cx: OnnxContext, node: OnnxNode, input_from: int = 13) -> list[int] | None:
    if node.version >= input_from:
        v = node.input(1)
        return None if v is None else cx.ints(v, "axes")
    a = node.attr("axes")
    return None if a is None else [int(i) for i in a]


@onnx_op(TABLE, "Squeeze", 1, 11, 13, *_LATEST)
def squeeze(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    axes = _axes(cx, node)
    if axes is None:
        return cx.op("squeeze", [x])
    norm = sorted({axis_of(a, x.type.rank, cx) for a in axes})
    for a in norm:
        if x.type.shape[a] != 1 and isinstance(x.type.shape[a], int):
            raise cx.error(f"cannot squeeze axis {a} of size {x.type.shape[a]}")
    return cx.op("squeeze", [x], axes=tuple(norm))


@onnx_op(TABLE, "Unsqueeze", 1, 11, 13, *_LATEST)
def unsqueeze(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    axes = _axes(cx, node) or []
    out_rank = x.type.rank + len(axes)
    norm = sorted(axis_of(a, out_rank, cx) for a in axes)
    if len(set(norm)) != len(norm):
        raise cx.error(f"axes {axes} repeat an axis")
    for a in norm:
        x = cx.op("unsqueeze", [x], axis=a)
    return x


@onnx_op(TABLE, "Transpose", 1, 13, *_LATEST)
def transpose(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    perm = node.attr("perm")
    perm = list(range(x.type.rank))[::-1] if perm is None else [int(p) for p in perm]
    return cx.op("permute", [x], perm=tuple(perm))


@onnx_op(TABLE, "Concat", 4, 11, 13)
def concat(cx: OnnxContext, node: OnnxNode) -> Value:
    xs = [v for v in node.inputs if v is not None]
    axis = axis_of(int(node.attr("axis")), xs[0].type.rank, cx)
    return cx.op("concat", xs, axis=axis)


@onnx_op(TABLE, "Split", 2, 11, 13, 18)
def split(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    x = x_of(node)
    axis = axis_of(int(node.attr("axis", 0)), x.type.rank, cx)
    dim = x.type.shape[axis]
    if node.version >= 13:
        sizes = None if node.input(1) is None else cx.ints(node.input(1), "split")
    else:
        sizes = node.attr("split")
        sizes = None if sizes is None else [int(s) for s in sizes]
    if sizes is None:
        if not isinstance(dim, int):
            raise cx.error(f"splitting the dynamic dim '{dim}' needs explicit sizes")
        n = int(node.attr("num_outputs", node.num_outputs))
        if node.version >= 18 and node.attr("num_outputs") is not None:
            chunk = -(-dim // n)  # the last chunk is smaller when dim % n != 0
            sizes = [min(chunk, dim - i * chunk) for i in range(n)]
        else:
            if dim % n:
                raise cx.error(f"dim {dim} does not split evenly into {n} outputs")
            sizes = [dim // n] * n
    if len(sizes) == 1:
        return [x]
    return list(cx.op_multi("split", [x], axis=axis, sizes=tuple(sizes)))


@onnx_op(TABLE, "Slice", 10, 11, 13)
def slice_(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x[starts:ends:steps]`` over ``axes``: bounds clamp as Python slices do; negative steps
    become a constant reversed index."""
    x = x_of(node)
    starts, ends = cx.ints(node.inputs[1], "starts"), cx.ints(node.inputs[2], "ends")
    axes = cx.ints(node.input(3), "axes") if node.input(3) is not None else list(range(len(starts)))
    steps = cx.ints(node.input(4), "steps") if node.input(4) is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise cx.error("starts, ends, axes and steps must have one entry per sliced axis")
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise cx.error("a slice step of 0 is invalid")
        axis = axis_of(axis, x.type.rank, cx)
        dim = x.type.shape[axis]
        if not isinstance(dim, int):
            if step < 0:
                raise cx.error(f"a negative step on the dynamic dim '{dim}' is not supported")
            x = cx.op("slice", [x], axis=axis, start=start, end=_clip64(end), step=step)
            continue
        s, e, st = slice(start, end, step).indices(dim)
        if st > 0:
            if (s, e, st) != (0, dim, 1):
                x = cx.op("slice", [x], axis=axis, start=s, end=max(e, s), step=st)
        else:
            x = select(cx, x, axis, np.arange(s, e, st))
    return x


def _clip64(v: int) -> int:
    return max(min(v, 2**62), -(2**62))


@onnx_op(TABLE, "Expand", 8, 13)
def expand(cx: OnnxContext, node: OnnxNode) -> Value:
    """Bidirectional broadcast of ``x`` against ``shape`` (a 1 in ``shape`` keeps x's dim)."""
    x = x_of(node)
    shape = cx.ints(node.inputs[1], "shape")
    rank = max(len(shape), x.type.rank)
    xs = (1,) * (rank - x.type.rank) + tuple(x.type.shape)
    ss = (1,) * (rank - len(shape)) + tuple(shape)
    out: list[Dim] = []
    for a, b in zip(xs, ss):
        if b == 1 or a == b:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise cx.error(f"cannot broadcast the input's {x.type} to shape {list(shape)}")
    if tuple(out) == tuple(x.type.shape):
        return x
    return cx.op("expand", [x], shape=tuple(out))


@onnx_op(TABLE, "Tile", 6, 13)
def tile(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    repeats = cx.ints(node.inputs[1], "repeats")
    if len(repeats) != x.type.rank:
        raise cx.error(f"repeats has {len(repeats)} entries for a rank-{x.type.rank} input")
    for axis, r in enumerate(repeats):
        if r < 0:
            raise cx.error(f"negative repeat {r}")
        if r != 1:
            dim = static_dims(cx, x, "Tile")[axis]
            x = select(cx, x, axis, np.tile(np.arange(dim), r))
    return x


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    idx = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n)
    period = 2 * (n - 1)  # reflect: mirror without repeating the edge
    if period == 0:
        return np.zeros_like(idx)
    m = np.mod(idx, period)
    return np.where(m < n, m, period - m)


@onnx_op(TABLE, "Pad", 2, 11, 13, 18, 19, *_LATEST)
def pad(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    rank = x.type.rank
    mode = str(node.attr("mode", "constant"))
    if node.version < 11:
        pads = [int(p) for p in node.attr("pads")]
        value = float(node.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = cx.ints(node.inputs[1], "pads")
        cv = node.input(2)
        value = float(cx.static(cv, "constant_value").reshape(-1)[0]) if cv is not None else 0.0
        axes = (
            [axis_of(a, rank, cx) for a in cx.ints(node.input(3), "axes")]
            if node.input(3) is not None
            else list(range(rank))
        )
    if len(pads) != 2 * len(axes):
        raise cx.error(f"pads has {len(pads)} entries for {len(axes)} axes")
    k = len(axes)
    begin = dict(zip(axes, pads[:k]))
    end = dict(zip(axes, pads[k:]))
    if mode == "constant":
        torch_pads: list[int] = []
        for axis in reversed(range(rank)):
            torch_pads += [begin.get(axis, 0), end.get(axis, 0)]
        while torch_pads[-2:] == [0, 0] and len(torch_pads) > 2:
            torch_pads = torch_pads[:-2]
        if not any(torch_pads):
            return x
        return cx.op("pad", [x], pads=tuple(torch_pads), value=value)
    if mode not in ("reflect", "edge", "wrap"):
        raise cx.error(f"pad mode {mode!r} is not one of constant, reflect, edge, wrap")
    dims = static_dims(cx, x, f"Pad mode {mode!r}")
    for axis in axes:
        b, e = begin[axis], end[axis]
        if b or e:
            if mode == "reflect" and (b >= dims[axis] or e >= dims[axis]):
                raise cx.error(f"reflect padding of {max(b, e)} needs a dim larger than that")
            x = select(cx, x, axis, _pad_index(dims[axis], b, e, mode))
    return x


@onnx_op(TABLE, "DepthToSpace", 1, 11, 13)
def depth_to_space(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    n, c, h, w = static_dims(cx, x, "DepthToSpace")
    b = int(node.attr("blocksize"))
    if str(node.attr("mode", "DCR")) == "DCR":
        y = cx.op("reshape", [x], shape=(n, b, b, c // (b * b), h, w))
        y = cx.op("permute", [y], perm=(0, 3, 4, 1, 5, 2))
    else:  # CRD
        y = cx.op("reshape", [x], shape=(n, c // (b * b), b, b, h, w))
        y = cx.op("permute", [y], perm=(0, 1, 4, 2, 5, 3))
    return cx.op("reshape", [y], shape=(n, c // (b * b), h * b, w * b))


@onnx_op(TABLE, "SpaceToDepth", 1, 13)
def space_to_depth(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    n, c, h, w = static_dims(cx, x, "SpaceToDepth")
    b = int(node.attr("blocksize"))
    y = cx.op("reshape", [x], shape=(n, c, h // b, b, w // b, b))
    y = cx.op("permute", [y], perm=(0, 3, 5, 1, 2, 4))
    return cx.op("reshape", [y], shape=(n, c * b * b, h // b, w // b))


__all__ = ["TABLE", "axis_of", "select", "static_dims"]
