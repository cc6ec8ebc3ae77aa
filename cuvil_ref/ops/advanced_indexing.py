"""Advanced (tensor) indexing, as PyTorch's ``x[i, :, j]`` and ``x[i, :, j] = v``: ``index``,
``index_put`` and ``masked_scatter``.

``index`` takes integer index tensors for some dims (``axes``, increasing); they broadcast to one
shape B, which replaces the indexed dims -- in place when they are adjacent, else at the front
(NumPy and PyTorch share this rule). Negative indices count from the end, as in PyTorch; an
index outside ``[-size, size)`` is an error. Its output shape never depends on data: boolean
masks, whose selection size does, are refused by the frontend unless they are constants.

``index_put`` and ``masked_scatter`` write into a copy of ``x``: their output has ``x``'s shape
whatever the data, so boolean masks are fine there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import broadcast_shapes, normalize_axis

INTEGER_INDEX = frozenset({DType.i64, DType.i32, DType.i16, DType.i8})


def _axes(op: str, x: TensorType, indices: Sequence[TensorType], attrs: FrozenDict) -> list[int]:
    axes = [normalize_axis(a, x.rank) for a in attrs["axes"]]
    if len(axes) != len(indices) or len(axes) == 0:
        raise ShapeError(f"op '{op}': give one axis per index tensor, got axes {attrs['axes']}")
    spans = [a + (t.rank if t.dtype == DType.bool else 1) for a, t in zip(axes, indices)]
    if any(a < b for a, b in zip(axes[1:], spans[:-1])) or spans[-1] > x.rank:
        raise ShapeError(
            f"op '{op}': axes {tuple(axes)} must increase and fit x [{format_shape(x.shape)}]"
        )
    return axes


def _index_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, indices = types[0], types[1:]
    for t in indices:
        if t.dtype not in INTEGER_INDEX:
            raise ShapeError(
                f"op 'index': index tensors must be integers (i8..i64), got {t.dtype.value}; "
                "boolean masks select a data-dependent number of elements"
            )
    axes = _axes("index", x, indices, attrs)
    b = broadcast_shapes(*(t.shape for t in indices))
    rest = [d for i, d in enumerate(x.shape) if i not in axes]
    if axes == list(range(axes[0], axes[0] + len(axes))):
        shape = (*x.shape[: axes[0]], *b, *x.shape[axes[-1] + 1 :])
    else:
        shape = (*b, *rest)
    return (TensorType(tuple(shape), x.dtype),)


def _wrapped(op: str, index: np.ndarray, size: int) -> np.ndarray:
    """``index`` with negative entries counted from the end; out-of-range ones are errors."""
    index = index.astype(np.int64, copy=False)
    if index.size and (index.min() < -size or index.max() >= size):
        bad = index[(index < -size) | (index >= size)].flat[0]
        raise InterpretError(f"op '{op}': index {bad} is out of range for a dim of size {size}")
    return np.where(index < 0, index + size, index)


def _numpy_key(op: str, x: np.ndarray, indices: Sequence[np.ndarray], axes: Sequence[int]) -> tuple:
    """The NumPy index tuple for ``x``: slices everywhere but ``axes`` (masks become their
    nonzero coordinates, which is what NumPy does with a boolean index)."""
    key: list = []
    for axis, index in zip(axes, indices):
        axis %= x.ndim
        while len(key) < axis:
            key.append(slice(None))
        if index.dtype == np.bool_:
            if index.shape != x.shape[axis : axis + index.ndim]:
                raise InterpretError(
                    f"op '{op}': mask of shape {list(index.shape)} does not match the dims "
                    f"{list(x.shape[axis : axis + index.ndim])} it indexes"
                )
            key.extend(np.nonzero(index))
        else:
            key.append(_wrapped(op, index, x.shape[axis]))
    return tuple(key)


def _index(x: np.ndarray, *indices: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    # np.array, not np.ascontiguousarray: the latter turns a 0-d result (a 0-d index) into [1]
    return np.array(x[_numpy_key("index", x, indices, axes)], order="C")


register(
    OpDef(
        name="index",
        conformance=grid(
            point("basic", shapes=((4, 5, 6), (3,)), dtypes=("f32", "i64"),
                  values=("normal", "index:4"), axes=(0,)),
            point("adjacent", shapes=((4, 5, 6), (2, 3), (3,)), dtypes=("f32", "i64", "i64"),
                  values=("normal", "index:4", "index:5"), axes=(0, 1)),
            # separated indexed dims: the broadcast index dims come first
            point("separated", shapes=((4, 5, 6), (2, 1), (3,)), dtypes=("f32", "i64", "i64"),
                  values=("normal", "index:4", "index:6"), axes=(0, 2)),
        ),  # fmt: skip
        inputs=("x", "*indices"),
        attrs=(Attr("axes", "ints", doc="the dim each index tensor indexes, increasing"),),
        infer=_index_infer,
        reference=_index,
        doc=(
            "y = x[.., indices[0], .., indices[1], ..] with indices[j] at dim axes[j] and full "
            "slices elsewhere (PyTorch/NumPy advanced indexing): the index tensors broadcast to "
            "B; y's shape is x's with the indexed dims replaced by B, in place if they are "
            "adjacent, else B first. Negative indices count from the end."
        ),
        category="indexing",
    )
)


def _index_put_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, values, indices = types[0], types[1], types[2:]
    for t in indices:
        if t.dtype not in INTEGER_INDEX | {DType.bool}:
            raise ShapeError(
                f"op 'index_put': index tensors must be integers or bool masks, got {t}"
            )
    if values.dtype != x.dtype:
        raise ShapeError(
            f"op 'index_put': values are {values.dtype.value} but x is {x.dtype.value}; cast them"
        )
    _axes("index_put", x, indices, attrs)
    return (TensorType(x.shape, x.dtype),)


def _index_put(
    x: np.ndarray,
    values: np.ndarray,
    *indices: np.ndarray,
    axes: tuple[int, ...],
    accumulate: bool,
) -> np.ndarray:
    y = x.copy()
    key = _numpy_key("index_put", x, indices, axes)
    target_shape = y[key].shape
    try:
        v = np.broadcast_to(values, target_shape)
    except ValueError:
        raise InterpretError(
            f"op 'index_put': values of shape {list(values.shape)} do not broadcast to the "
            f"indexed shape {list(target_shape)}"
        ) from None
    if accumulate:
        with np.errstate(all="ignore"):
            np.add.at(y, key, v)
    else:
        y[key] = v  # repeated positions: the last write wins, as PyTorch's serial CPU loop
    return y


register(
    OpDef(
        name="index_put",
        conformance=grid(
            point("accumulate", shapes=((4, 5), (6, 5), (6,)), dtypes=("f32", "f32", "i64"),
                  values=("normal", "normal", "index:4"), axes=(0,), accumulate=True,
                  label="repeats"),
            point("basic", shapes=((4, 5), (3,), (3,), (3,)),
                  dtypes=("f32", "f32", "i64", "i64"),
                  values=("normal", "normal", "index:4", "index:5"), axes=(0, 1)),
            point("mask", shapes=((4, 5), (), (4, 5)), dtypes=("f32", "f32", "bool"),
                  axes=(0,), label="scalar"),
        ),  # fmt: skip
        inputs=("x", "values", "*indices"),
        attrs=(
            Attr("axes", "ints", doc="the first dim each index tensor indexes, increasing"),
            Attr("accumulate", "bool", False, "add into x instead of overwriting"),
        ),
        infer=_index_put_infer,
        reference=_index_put,
        doc=(
            "y = copy of x; y[key] = values (or += with accumulate), key as in `index` "
            "(a bool mask of rank r covers r dims and selects its true positions); values "
            "broadcast to the indexed shape. Without accumulate a repeated position keeps the "
            "last value written in row-major index order."
        ),
        category="indexing",
    )
)


def _masked_scatter_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict
) -> tuple[TensorType, ...]:
    x, mask, source = types
    if mask.dtype != DType.bool:
        raise ShapeError(f"op 'masked_scatter': mask must be bool, got {mask.dtype.value}")
    if source.dtype != x.dtype:
        raise ShapeError(
            f"op 'masked_scatter': source is {source.dtype.value} but x is {x.dtype.value}"
        )
    shape: tuple[Dim, ...] = broadcast_shapes(x.shape, mask.shape)
    return (TensorType(shape, x.dtype),)


def _masked_scatter(x: np.ndarray, mask: np.ndarray, source: np.ndarray) -> np.ndarray:
    shape = np.broadcast_shapes(x.shape, mask.shape)
    y = np.array(np.broadcast_to(x, shape))
    m = np.broadcast_to(mask, shape)
    count = int(m.sum())
    if count > source.size:
        raise InterpretError(
            f"op 'masked_scatter': the mask has {count} true elements but source has only "
            f"{source.size}"
        )
    y[m] = source.reshape(-1)[:count]
    return y


register(
    OpDef(
        name="masked_scatter",
        conformance=grid(
            point("basic", shapes=((3, 4), (3, 4), (12,)), dtypes=("f32", "bool", "f32")),
            point("broadcast", shapes=((2, 3, 4), (3, 4), (30,)), dtypes=("f32", "bool", "f32")),
        ),  # fmt: skip
        inputs=("x", "mask", "source"),
        infer=_masked_scatter_infer,
        reference=_masked_scatter,
        doc=(
            "y = x broadcast with mask; the k-th true position of mask (row-major) gets "
            "source.flat[k] (torch.Tensor.masked_scatter); source needs at least as many "
            "elements as mask has true ones."
        ),
        category="indexing",
    )
)
