"""Converters for the Core ATen indexing ops: advanced indexing (``index.Tensor``), writes into a
copy (``index_put``, ``masked_scatter``, ``scatter*``, ``slice_scatter``) and ``nonzero``.

Shapes in Cuvil's IR are static or symbolic in the inputs' sizes, never in their values. So a
boolean mask that *selects* (``x[mask]``, ``nonzero``) is accepted only when it is a constant of
the graph (it then becomes integer indices at capture time); a mask fed by the model's inputs is
refused with a ``CaptureError`` that names the op and what works instead. Masks that *write*
(``x[mask] = v``, ``masked_scatter``) keep ``x``'s shape and are fine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import rank
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]
_MASKS = (DType.bool, DType.u8)  # torch reads a uint8 index as a mask (deprecated)


def _constant(cx: Converter, v: Value) -> np.ndarray | None:
    return cx.builder.constant_array(v.name)


def _as_bool(cx: Converter, mask: Value) -> Value:
    return mask if mask.type.dtype == DType.bool else cx.op("cast", [mask], dtype="bool")


def _index_args(
    cx: Converter, x: Value, indices: Sequence[Value | None], op: str, masks_ok: bool
) -> tuple[list[Value], list[int]]:
    """(index tensors, the first dim each indexes). Selecting masks must be constants: they
    become their nonzero coordinates."""
    tensors: list[Value] = []
    axes: list[int] = []
    dim = 0
    for ix in indices:
        if ix is None:
            dim += 1
            continue
        if ix.type.dtype in _MASKS:
            if masks_ok:
                tensors.append(_as_bool(cx, ix))
                axes.append(dim)
                dim += rank(ix)
                continue
            const = _constant(cx, ix)
            if const is None:
                raise CaptureError(
                    f"{op} with a boolean mask {ix.type} computed from the inputs: the result's "
                    "size depends on the mask's values, and Cuvil's shapes are static (or "
                    "symbolic in input sizes); use torch.where(mask, x, fill) or masked_fill to "
                    "keep the shape"
                )
            for coords in np.nonzero(const.astype(bool)):
                tensors.append(cx.constant(coords.astype(np.int64), "mask_index"))
                axes.append(dim)
                dim += 1
            continue
        if ix.type.dtype.numpy.kind not in "iu":
            raise CaptureError(f"{op}: index tensors must be integers or masks, got {ix.type}")
        tensors.append(ix)
        axes.append(dim)
        dim += 1
    if dim > rank(x):
        raise CaptureError(f"{op}: too many indices ({dim}) for a tensor of rank {rank(x)}")
    return tensors, axes


def index(cx: Converter, x: Value, indices: Sequence[Value | None]) -> Value:
    """``x[i0, :, i2]`` (``aten.index.Tensor``)."""
    tensors, axes = _index_args(cx, x, indices, "aten.index", masks_ok=False)
    if not tensors:
        return x
    return cx.op("index", [x, *tensors], axes=tuple(axes))


def index_put(
    cx: Converter,
    x: Value,
    indices: Sequence[Value | None],
    values: Value,
    accumulate: bool = False,
) -> Value:
    """``x[i0, :, i2] = values`` (or ``+=`` with accumulate), on a copy."""
    tensors, axes = _index_args(cx, x, indices, "aten.index_put", masks_ok=True)
    if not tensors:
        raise CaptureError("aten.index_put without an index tensor is not supported")
    values = _cast(cx, values, x)
    return cx.op("index_put", [x, values, *tensors], axes=tuple(axes), accumulate=bool(accumulate))


def masked_scatter(cx: Converter, x: Value, mask: Value, source: Value) -> Value:
    return cx.op("masked_scatter", [x, _as_bool(cx, mask), source])


def _cast(cx: Converter, v: Value, like: Value) -> Value:
    if v.type.dtype == like.type.dtype:
        return v
    return cx.op("cast", [v], dtype=like.type.dtype.value)


def _src(cx: Converter, like: Value, index: Value, src: Any) -> Value:
    """``src`` as a tensor: a Python scalar (``scatter.value``) becomes one of index's shape."""
    if isinstance(src, Value):
        return _cast(cx, src, like)
    one = cx.constant(np.full((1,) * rank(index), src, dtype=like.type.dtype.numpy), "value")
    return cx.op("expand", [one], shape=tuple(index.type.shape)) if rank(index) else one


def _bool_reduce(x: Value, reduce: str) -> str:
    """On bool tensors torch's accumulating scatters are logical: sum is or, prod is and."""
    if x.type.dtype.value != "bool":
        return reduce
    return {"sum": "amax", "prod": "amin"}.get(reduce, reduce)


def scatter(
    cx: Converter, x: Value, dim: int, index: Value, src: Any, reduce: str | None = None
) -> Value:
    """``scatter.src`` / ``scatter.value``, and the old ``reduce='add'|'multiply'`` forms."""
    table = {None: "none", "add": "sum", "multiply": "prod"}
    if reduce not in table:
        raise CaptureError(f"scatter with reduce={reduce!r} is not supported (use add/multiply)")
    return cx.op(
        "scatter",
        [x, index, _src(cx, x, index, src)],
        axis=int(dim),
        reduce=_bool_reduce(x, table[reduce]),
    )


def scatter_add(cx: Converter, x: Value, dim: int, index: Value, src: Value) -> Value:
    reduce = _bool_reduce(x, "sum")
    return cx.op("scatter", [x, index, _src(cx, x, index, src)], axis=int(dim), reduce=reduce)


def scatter_reduce(
    cx: Converter,
    x: Value,
    dim: int,
    index: Value,
    src: Value,
    reduce: str,
    include_self: bool = True,
) -> Value:
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise CaptureError(f"scatter_reduce with reduce={reduce!r} is not supported")
    return cx.op(
        "scatter",
        [x, index, _src(cx, x, index, src)],
        axis=int(dim),
        reduce=_bool_reduce(x, reduce),
        include_self=bool(include_self),
    )


def slice_scatter(
    cx: Converter,
    x: Value,
    src: Value,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Value:
    big = 2**62  # ATen's "to the end" sentinel is INT64_MAX
    return cx.op(
        "slice_scatter",
        [x, _cast(cx, src, x)],
        axis=int(dim),
        start=0 if start is None else max(-big, min(int(start), big)),
        end=None if end is None or int(end) >= big else int(end),
        step=int(step),
    )


def select_scatter(cx: Converter, x: Value, src: Value, dim: int, index: int) -> Value:
    """``x`` with ``src`` written at ``index`` along ``dim``: a one-wide slice_scatter."""
    axis = int(dim) % max(rank(x), 1)
    size = x.type.shape[axis]
    start = int(index) + size if int(index) < 0 and isinstance(size, int) else int(index)
    wide = cx.op("unsqueeze", [src], axis=axis)
    return slice_scatter(cx, x, wide, axis, start, start + 1, 1)


def nonzero(cx: Converter, x: Value) -> Value:
    const = _constant(cx, x)
    if const is None:
        raise CaptureError(
            f"aten.nonzero of {x.type} computed from the inputs: its output size depends on the "
            "values, and Cuvil's shapes are static (or symbolic in input sizes); keep the data "
            "in place with torch.where / masked_fill, or pass a fixed size (nonzero_static)"
        )
    return cx.constant(np.stack(np.nonzero(const), axis=-1).astype(np.int64), "nonzero")


TABLE: dict[str, Conv] = {
    "aten::index": index,
    "aten::index_put": index_put,
    "aten::masked_scatter": masked_scatter,
    "aten::scatter": scatter,
    "aten::scatter_add": scatter_add,
    "aten::scatter_reduce": scatter_reduce,
    "aten::slice_scatter": slice_scatter,
    "aten::select_scatter": select_scatter,
    "aten::nonzero": nonzero,
}
