"""Gathering by integer indices: index_select, gather (torch.gather) and embedding.

Index tensors are i32 or i64. As in PyTorch, every index must lie in ``[0, size)``: negative
indices are errors here (torch raises "index out of range"), not counted from the end.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import normalize_axis

INDEX_DTYPES = frozenset({DType.i32, DType.i64})


def _check_index_type(op: str, t: TensorType) -> None:
    if t.dtype not in INDEX_DTYPES:
        raise ShapeError(f"op '{op}': indices must be i32 or i64, got {t.dtype.value}")


def _check_rank(op: str, x: TensorType) -> None:
    if x.rank == 0:
        raise ShapeError(f"op '{op}' needs x of rank >= 1; unsqueeze a 0-d tensor first")


def _check_range(op: str, index: np.ndarray, size: int) -> None:
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)].flat[0]
        raise InterpretError(f"op '{op}': index {bad} is out of range [0, {size})")


def _index_select_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, index = types
    _check_index_type("index_select", index)
    if index.rank > 1:
        raise ShapeError(
            f"index_select: index must be 0-d or 1-d, got [{format_shape(index.shape)}]"
        )
    _check_rank("index_select", x)
    shape = list(x.shape)
    axis = normalize_axis(attrs["axis"], len(shape))
    shape[axis] = index.shape[0] if index.rank == 1 else 1
    return (TensorType(tuple(shape), x.dtype),)


def _index_select(x: np.ndarray, index: np.ndarray, *, axis: int) -> np.ndarray:
    axis = axis % x.ndim
    _check_range("index_select", index, x.shape[axis])
    return np.take(x, index.reshape(-1), axis=axis)


register(
    OpDef(
        name="index_select",
        inputs=("x", "index"),
        attrs=(Attr("axis", "int", 0),),
        infer=_index_select_infer,
        reference=_index_select,
        doc="y = x with dim `axis` replaced by x[..., index[k], ...] over k (torch.index_select)",
        category="indexing",
        conformance=grid(
            point(axis=0, shapes=((5, 4), (3,)), dtypes=("f32", "i64"),
                  values=("normal", "index:5")),
            point(axis=1, shapes=((3, 6), (7,)), dtypes=("f32", "i64"),
                  values=("normal", "index:6")),
            point("negative_axis", axis=-1, shapes=((2, 3, 4), (2,)), dtypes=("f32", "i64"),
                  values=("normal", "index:4")),
        ),
        torch_twin=lambda torch, x, index, axis: torch.index_select(x, axis, index),
    )
)


def _gather_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, index = types
    _check_index_type("gather", index)
    if x.rank != index.rank:
        raise ShapeError(
            f"gather: index [{format_shape(index.shape)}] must have the rank of x "
            f"[{format_shape(x.shape)}]"
        )
    _check_rank("gather", x)
    axis = normalize_axis(attrs["axis"], x.rank)
    for d, (a, b) in enumerate(zip(index.shape, x.shape, strict=True)):
        if d != axis and a != b and not (isinstance(a, int) and isinstance(b, int) and a <= b):
            raise ShapeError(
                f"gather: index [{format_shape(index.shape)}] is larger than x "
                f"[{format_shape(x.shape)}] in dim {d}"
            )
    return (TensorType(index.shape, x.dtype),)


def _gather(x: np.ndarray, index: np.ndarray, *, axis: int) -> np.ndarray:
    axis = axis % x.ndim
    _check_range("gather", index, x.shape[axis])
    # torch.gather lets index be smaller than x in the other dims: only that corner is read.
    corner = tuple(slice(None) if d == axis else slice(0, index.shape[d]) for d in range(x.ndim))
    return np.take_along_axis(x[corner], index.astype(np.intp, copy=False), axis=axis)


register(
    OpDef(
        name="gather",
        inputs=("x", "index"),
        attrs=(Attr("axis", "int"),),
        infer=_gather_infer,
        reference=_gather,
        doc=(
            "y[i0, .., ik, ..] = x[i0, .., index[i0, .., ik, ..], ..] with the index replacing "
            "dim `axis` (torch.gather); y has index's shape"
        ),
        category="indexing",
        conformance=grid(
            point(axis=1, shapes=((4, 5), (4, 3)), dtypes=("f32", "i64"),
                  values=("normal", "index:5")),
            point(axis=0, shapes=((4, 5), (2, 5)), dtypes=("f32", "i64"),
                  values=("normal", "index:4")),
            point("negative_axis", axis=-1, shapes=((2, 3, 4), (2, 3, 2)), dtypes=("f32", "i64"),
                  values=("normal", "index:4")),
        ),
        torch_twin=lambda torch, x, index, axis: torch.gather(x, axis, index),
    )
)


def _embedding_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    weight, indices = types
    _check_index_type("embedding", indices)
    if weight.rank != 2:
        raise ShapeError(
            f"embedding: weight must be [num_embeddings, dim], got [{format_shape(weight.shape)}]"
        )
    return (TensorType((*indices.shape, weight.shape[1]), weight.dtype),)


def _embedding(weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    _check_range("embedding", indices, weight.shape[0])
    return weight[indices]


register(
    OpDef(
        name="embedding",
        inputs=("weight", "indices"),
        infer=_embedding_infer,
        reference=_embedding,
        doc=(
            "y[..., :] = weight[indices[...], :]; y has shape indices.shape + [dim] "
            "(torch.nn.functional.embedding at inference: padding_idx and max_norm do not apply)"
        ),
        category="indexing",
        conformance=grid(
            point(shapes=((10, 4), (3,)), dtypes=("f32", "i64"), values=("normal", "index:10"),
                  consts=(0,)),
            point(shapes=((7, 5), (2, 3)), dtypes=("f32", "i64"), values=("normal", "index:7"),
                  consts=(0,)),
        ),
        torch_twin=lambda torch, weight, indices: torch.nn.functional.embedding(indices, weight),
    )
)
