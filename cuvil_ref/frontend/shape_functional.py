"""Converters for shape and indexing calls: view/reshape, flatten, permute/transpose, squeeze,
cat/stack, chunk/split, tensor indexing (``x[:, 1:3, None]``), ``x.size(i)``/``x.shape``.

Sizes read from a tensor come back as ints or :class:`SymDim`, so the model's own Python
arithmetic on them (``x.view(b, t, h, d // h)``) runs at capture time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter, SymDim, dtype_to_torch, ir_dim, reshape_dims
from cuvil_ref.frontend.functional import dim_of, dims_arg, rank, sizes_arg, static_dim
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops.shapes import normalize_axis

# --------------------------------------------------------------------------- sizes


def size(cx: Converter, input: Value, dim: int | None = None) -> Any:
    if dim is None:
        return tuple(SymDim.of(d) for d in input.type.shape)
    return dim_of(input, int(dim))


def dim(cx: Converter, input: Value) -> int:
    return rank(input)


def numel(cx: Converter, input: Value) -> Any:
    n: Any = 1
    for d in input.type.shape:
        n = n * SymDim.of(d)
    return n


def getattr_(cx: Converter, obj: Any, name: str) -> Any:
    """``x.shape``, ``x.dtype``, ``x.ndim``, ``x.T`` on a tensor; plain getattr otherwise."""
    if not isinstance(obj, Value):
        return getattr(obj, name)
    if name == "shape":
        return size(cx, obj)
    if name == "ndim":
        return rank(obj)
    if name == "dtype":
        return dtype_to_torch(obj.type.dtype)
    if name == "T":
        return permute(cx, obj, *reversed(range(rank(obj))))
    if name in ("device", "is_cuda", "requires_grad"):
        return {"device": "cpu", "is_cuda": False, "requires_grad": False}[name]
    raise CaptureError(f"tensor attribute '.{name}' is not supported by Cuvil")


# --------------------------------------------------------------------------- reshaping


def reshape(cx: Converter, input: Value, *shape: Any) -> Value:
    dims = reshape_dims(sizes_arg(shape))
    if dims == input.type.shape:
        return input
    return cx.op("reshape", [input], shape=dims)


def unflatten(cx: Converter, input: Value, dim: int, sizes: Any) -> Value:
    axis = normalize_axis(int(dim), rank(input))
    shape = [SymDim.of(d) for d in input.type.shape]
    return reshape(cx, input, shape[:axis] + list(sizes) + shape[axis + 1 :])


def flatten(cx: Converter, input: Value, start_dim: int = 0, end_dim: int = -1) -> Value:
    if rank(input) == 0:
        return reshape(cx, input, [1])
    start = normalize_axis(int(start_dim), rank(input))
    end = normalize_axis(int(end_dim), rank(input))
    if start >= end:
        return input
    return cx.op("flatten", [input], start_dim=start, end_dim=end)


def permute(cx: Converter, input: Value, *dims: Any) -> Value:
    perm = tuple(normalize_axis(int(d), rank(input)) for d in sizes_arg(dims))
    if perm == tuple(range(rank(input))):
        return input
    return cx.op("permute", [input], perm=perm)


def transpose(cx: Converter, input: Value, dim0: int, dim1: int) -> Value:
    a, b = normalize_axis(int(dim0), rank(input)), normalize_axis(int(dim1), rank(input))
    if a == b:
        return input
    return cx.op("transpose", [input], dim0=min(a, b), dim1=max(a, b))


def t(cx: Converter, input: Value) -> Value:
    return input if rank(input) < 2 else transpose(cx, input, 0, 1)


def squeeze(cx: Converter, input: Value, dim: Any = None) -> Value:
    if rank(input) == 0:  # torch: squeezing a 0-d tensor (dim 0 or -1) returns it
        return input
    axes = dims_arg(dim)
    if axes is None:
        axes = tuple(i for i, d in enumerate(input.type.shape) if d == 1)
    else:
        axes = tuple(a for a in axes if input.type.shape[normalize_axis(a, rank(input))] == 1)
    if not axes:
        return input
    return cx.op("squeeze", [input], axes=axes)


def unsqueeze(cx: Converter, input: Value, dim: int) -> Value:
    return cx.op("unsqueeze", [input], axis=int(dim))


def expand(cx: Converter, input: Value, *sizes: Any) -> Value:
    want = sizes_arg(sizes)
    lead = len(want) - rank(input)
    shape = []
    for i, s in enumerate(want):
        if isinstance(s, int) and s == -1:
            shape.append(input.type.shape[i - lead])
        else:
            shape.append(ir_dim(s))
    if tuple(shape) == input.type.shape:
        return input
    return cx.op("expand", [input], shape=tuple(shape))


def expand_as(cx: Converter, input: Value, other: Value) -> Value:
    return expand(cx, input, [SymDim.of(d) for d in other.type.shape])


def repeat_interleave_unsupported(*args: Any, **kwargs: Any) -> Value:
    raise CaptureError("repeat_interleave is not supported by Cuvil")


# --------------------------------------------------------------------------- joining, splitting


def cat(cx: Converter, tensors: Any, dim: int = 0) -> Value:
    values = [v for v in tensors if not (isinstance(v, Value) and v.type.shape == (0,))]
    if not values and tensors:  # only legacy empty 1-d tensors: torch returns an empty one
        return tensors[0]
    if len(values) == 1:
        return values[0]
    return cx.op("concat", values, axis=int(dim))


def stack(cx: Converter, tensors: Any, dim: int = 0) -> Value:
    return cat(cx, [unsqueeze(cx, v, dim) for v in tensors], dim)


def split(cx: Converter, input: Value, split_size_or_sections: Any, dim: int = 0) -> tuple:
    n = static_dim(input, int(dim), "split")
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
    else:
        step = int(split_size_or_sections)
        sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
    if len(sizes) == 1:
        return (input,)
    return cx.op_multi("split", [input], axis=int(dim), sizes=tuple(sizes))


def chunk(cx: Converter, input: Value, chunks: int, dim: int = 0) -> tuple:
    n = static_dim(input, int(dim), "chunk")
    step = -(-n // int(chunks))
    return split(cx, input, step, dim)


def unbind(cx: Converter, input: Value, dim: int = 0) -> tuple:
    parts = split(cx, input, 1, dim)
    return tuple(squeeze(cx, p, dim) for p in parts)


def slice_(
    cx: Converter, input: Value, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Value:
    axis = normalize_axis(int(dim), rank(input))
    size_ = input.type.shape[axis]
    if isinstance(end, SymDim) and not isinstance(start, SymDim) and int(step) == 1:
        return _slice_to_symbol(cx, input, axis, 0 if start is None else int(start), end)
    lo, hi, st = (0 if start is None else int(start)), end, int(step)
    if hi is None or (isinstance(hi, int) and hi >= 2**62):
        hi = size_ if isinstance(size_, int) else None
    if isinstance(size_, int):
        begin, stop, _ = slice(lo, hi, st).indices(size_)
        if (begin, stop, st) == (0, size_, 1):
            return input
    return cx.op(
        "slice", [input], axis=axis, start=lo, end=None if hi is None else int(hi), step=st
    )


def _slice_to_symbol(cx: Converter, input: Value, axis: int, start: int, end: SymDim) -> Value:
    """``x[start:n]`` where ``n`` is a dynamic size: the whole dim when ``x``'s dim is ``n`` and
    ``start`` is 0, else ``narrow`` over the symbol (``position_ids[:, :seq_len]``)."""
    size_ = input.type.shape[axis]
    if start == 0 and end.name is not None and size_ == end.name:
        return input
    if start != 0 or end.name is None or not isinstance(size_, int):
        raise CaptureError(
            f"slice [{start}:{end}] of a dim of size {size_}: Cuvil supports x[:n] where n is an "
            "input's dynamic dim; make the other sizes static"
        )
    return cx.op("narrow", [input], axis=axis, start=0, length=(end.name,))


def narrow(cx: Converter, input: Value, dim: int, start: Any, length: int) -> Value:
    """``narrow(x, dim, start, length)``; a tensor ``start`` (known only at run time) becomes
    ``index_select(x, dim, arange(length) + start)``, with torch's wrap of a negative start;
    a window past the end is an error at run time, as in torch."""
    if not isinstance(start, Value):
        return slice_(cx, input, dim, start, int(start) + int(length))
    size = static_dim(input, int(dim), "narrow with a tensor start")
    s = start if start.type.dtype.value == "i64" else cx.op("cast", [start], dtype="i64")
    s = cx.op("reshape", [s], shape=(1,))
    zero, n = cx.constant(np.zeros(1, np.int64)), cx.constant(np.full(1, size, np.int64))
    s = cx.op("where", [cx.op("lt", [s, zero]), cx.op("add", [s, n]), s])
    window = cx.op("add", [cx.constant(np.arange(int(length), dtype=np.int64), "arange"), s])
    return cx.op("index_select", [input, window], axis=int(dim))


def select(cx: Converter, input: Value, dim: int, index: int) -> Value:
    axis = normalize_axis(int(dim), rank(input))
    i = int(index)
    end = i + 1 if i != -1 else None
    return cx.op("squeeze", [slice_(cx, input, axis, i, end, 1)], axes=(axis,))


def getitem(cx: Converter, obj: Any, index: Any) -> Any:
    """``obj[index]``: Python indexing for tuples/shapes, basic tensor indexing for Values."""
    if not isinstance(obj, Value):
        return obj[index]
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise CaptureError("an index with more than one '...' is not valid")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > rank(obj):
        raise CaptureError(f"too many indices ({used}) for a tensor of rank {rank(obj)}")
    out, axis, drop = obj, 0, []
    for item in items:
        if item is Ellipsis:
            axis += rank(obj) - used
        elif item is None:
            out = unsqueeze(cx, out, axis)
            axis += 1
        elif isinstance(item, slice):
            out = slice_(
                cx, out, axis, item.start, item.stop, 1 if item.step is None else item.step
            )
            axis += 1
        elif isinstance(item, int):
            out = slice_(cx, out, axis, item, item + 1 if item != -1 else None, 1)
            drop.append(axis)
            axis += 1
        elif isinstance(item, Value) and rank(item) == 1 and item.type.dtype.numpy.kind in "iu":
            out = cx.op("index_select", [out, item], axis=axis)
            axis += 1
        else:
            raise CaptureError(
                f"tensor indexing with {item!r} is not supported by Cuvil (supported: ints, "
                "slices, None, ..., and one 1-D integer index tensor)"
            )
    return cx.op("squeeze", [out], axes=tuple(drop)) if drop else out


def index_select(cx: Converter, input: Value, dim: int, index: Value) -> Value:
    if input.type.rank == 0:  # torch treats a 0-d tensor as one element along dim 0 (or -1)
        flat = cx.op("reshape", [input], shape=(1,))
        picks = cx.op("reshape", [index], shape=(-1,))
        one = cx.op("index_select", [flat, picks], axis=0)
        return cx.op("reshape", [one], shape=())
    return cx.op("index_select", [input, index], axis=int(dim))


def gather(cx: Converter, input: Value, dim: int, index: Value, sparse_grad: bool = False) -> Value:
    if input.type.rank == 0:  # one element along dim 0; the result has index's shape
        flat = cx.op("reshape", [input], shape=(1,))
        picks = cx.op("reshape", [index], shape=(-1,))
        got = cx.op("gather", [flat, picks], axis=0)
        return cx.op("reshape", [got], shape=tuple(index.type.shape))
    static = all(isinstance(d, int) for d in index.type.shape)
    if static and 0 in index.type.shape and index.type.rank != input.type.rank:
        # torch accepts an empty index of any rank: the result is empty, of the index's shape
        empty = np.zeros(tuple(int(d) for d in index.type.shape), dtype=input.type.dtype.numpy)
        return cx.constant(empty, "gather")
    if index.type.dtype.value not in ("i32", "i64"):  # torch also takes narrow integer indices
        index = cx.op("cast", [index], dtype="i64")
    return cx.op("gather", [input, index], axis=int(dim))


def embedding(cx: Converter, input: Value, weight: Value, *args: Any, **kwargs: Any) -> Value:
    """F.embedding(input, weight, ...): padding_idx/max_norm only matter in training (max_norm
    renormalizes the weights, which Cuvil refuses)."""
    if kwargs.get("max_norm") is not None or (len(args) > 1 and args[1] is not None):
        raise CaptureError("F.embedding with max_norm is not supported by Cuvil")
    return cx.op("embedding", [weight, input])


def aten_embedding(cx: Converter, weight: Value, indices: Value, *args: Any) -> Value:
    return cx.op("embedding", [weight, indices])
