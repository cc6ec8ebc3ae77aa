"""Element rearrangements that are views in PyTorch: ``flip`` (reverse axes) and ``diagonal``
(a diagonal of two axes, moved to the end). Cuvil tensors are values, so both produce copies.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import normalize_axes, normalize_axis


def _flip_axes(axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    if rank == 0:
        for a in axes:
            if a not in (0, -1):
                raise ShapeError(f"axis {a} is out of range for a rank-0 tensor (use 0 or -1)")
        return ()
    return normalize_axes(axes, rank) if axes else ()


def _flip_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    _flip_axes(attrs["axes"], x.rank)
    return (TensorType(x.shape, x.dtype),)


def _flip(x: np.ndarray, *, axes: tuple[int, ...]) -> np.ndarray:
    """y = x with the order of elements reversed along each of ``axes``."""
    ax = _flip_axes(axes, x.ndim)
    return np.flip(x, axis=ax).copy() if ax else x.copy()


register(
    OpDef(
        name="flip",
        inputs=("x",),
        attrs=(Attr("axes", "ints", doc="the axes to reverse (empty: none)"),),
        infer=_flip_infer,
        reference=_flip,
        doc="y[..., i, ...] = x[..., n - 1 - i, ...] along each axis in `axes`",
        category="shape",
        conformance=grid(
            point(axes=(0,), shapes=((2, 3, 4),)),
            point("negative_axes", axes=(-1, 0), shapes=((2, 3, 4),)),
            point("empty", axes=(1, 2), shapes=((3, 0, 2),)),
            point("no_axes", axes=(), shapes=((5,),)),
            point("bool", axes=(1,), shapes=((3, 4),), dtypes="bool", values="bool"),
        ),
        torch_twin=lambda torch, x, axes: torch.flip(x, dims=axes),
    )
)


def _diag_parts(shape: tuple, offset: int, dim1: int, dim2: int) -> tuple[int, int, int | str]:
    rank = len(shape)
    a, b = normalize_axis(dim1, rank), normalize_axis(dim2, rank)
    if a == b:
        raise ShapeError(f"diagonal: dim1 and dim2 are both axis {a}; give two different axes")
    n1, n2 = shape[a], shape[b]
    if isinstance(n1, str) or isinstance(n2, str):
        raise ShapeError(
            f"diagonal of symbolic dims ({n1}, {n2}) is not supported; make them static"
        )
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    return a, b, length


def _diagonal_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    a, b, length = _diag_parts(x.shape, attrs["offset"], attrs["dim1"], attrs["dim2"])
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (a, b))
    return (TensorType((*rest, length), x.dtype),)


def _diagonal(x: np.ndarray, *, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """y[..., i] = x[..., i, ..., i + offset, ...] (dim1 and dim2 removed, the diagonal last)."""
    a, b, length = _diag_parts(x.shape, offset, dim1, dim2)
    if length == 0:
        rest = tuple(d for i, d in enumerate(x.shape) if i not in (a, b))
        return np.zeros((*rest, 0), dtype=x.dtype)
    return np.diagonal(x, offset=offset, axis1=a, axis2=b).copy()


register(
    OpDef(
        name="diagonal",
        inputs=("x",),
        attrs=(
            Attr("offset", "int", 0, "0: main diagonal; > 0 above it; < 0 below it"),
            Attr("dim1", "int", 0, "first axis of the 2-D planes"),
            Attr("dim2", "int", 1, "second axis of the 2-D planes"),
        ),
        infer=_diagonal_infer,
        reference=_diagonal,
        doc="y[..., i] = x[..., i, ..., i + offset, ...] over axes (dim1, dim2), which are removed "
        "and replaced by one last axis of the diagonal's length (as torch.diagonal)",
        category="shape",
        conformance=grid(
            point(shapes=((4, 5),)),
            point("offset", offset=2, shapes=((4, 5),)),
            point("offset", offset=-3, shapes=((4, 5),)),
            point("dims", dim1=-1, dim2=0, offset=1, shapes=((2, 3, 4),)),
            point("empty", offset=5, shapes=((3, 3),)),
        ),
        torch_twin=lambda torch, x, offset, dim1, dim2: torch.diagonal(
            x, offset=offset, dim1=dim1, dim2=dim2
        ),
    )
)
