"""Writing into a copy of a tensor: ``scatter`` (torch.scatter / scatter_add / scatter_reduce)
and ``slice_scatter``.

``scatter`` sends ``src[p]`` to ``x[p with dim `axis` replaced by index[p]]`` for every position
``p`` of ``index`` (which may be smaller than ``src`` and ``x`` in every dim but ``axis``) and
combines what lands on one element with ``reduce``. The order in which several sources reach one
element is PyTorch's serial CPU order, row-major over ``index``: plain assignment keeps the last,
float sums and products accumulate in that order.
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


def _scatter_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, index, src = types
    if index.dtype not in (DType.i64, DType.i32):
        raise ShapeError(f"op 'scatter': index must be i32 or i64, got {index.dtype.value}")
    if src.dtype != x.dtype:
        raise ShapeError(f"op 'scatter': src is {src.dtype.value} but x is {x.dtype.value}")
    if attrs["reduce"] not in ("none", "amax", "amin") and x.dtype == DType.bool:
        raise ShapeError(f"op 'scatter': reduce='{attrs['reduce']}' is not defined for bool")
    rank = max(x.rank, 1)
    if not (index.rank == src.rank == x.rank or (x.rank == 0 and index.rank <= 1)):
        raise ShapeError(
            f"op 'scatter': x [{format_shape(x.shape)}], index [{format_shape(index.shape)}] and "
            f"src [{format_shape(src.shape)}] must have one rank"
        )
    axis = normalize_axis(attrs["axis"], rank)
    for d, (i, s, t) in enumerate(zip(index.shape, src.shape, x.shape or (1,))):
        static = all(isinstance(v, int) for v in (i, s, t))
        if static and (i > s or (d != axis and i > t)):
            raise ShapeError(
                f"op 'scatter': index [{format_shape(index.shape)}] is larger than src "
                f"[{format_shape(src.shape)}] or x [{format_shape(x.shape)}] in dim {d}"
            )
    return (TensorType(x.shape, x.dtype),)


def _targets(x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """Flat positions in ``x`` that each element of ``index`` (row-major) writes to."""
    size = x.shape[axis]
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)].flat[0]
        raise InterpretError(f"op 'scatter': index {bad} is out of range [0, {size})")
    coords = list(np.indices(index.shape, sparse=True))
    coords[axis] = index.astype(np.int64)
    return np.ravel_multi_index(np.broadcast_arrays(*coords), x.shape).reshape(-1)


def _identity(reduce: str, dtype: np.dtype) -> int | float:
    if reduce in ("amax", "amin"):
        if dtype.kind == "b":
            return reduce == "amin"
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return int(info.min if reduce == "amax" else info.max)
        return -np.inf if reduce == "amax" else np.inf
    return 1 if reduce == "prod" else 0


def _scatter(
    x: np.ndarray,
    index: np.ndarray,
    src: np.ndarray,
    *,
    axis: int,
    reduce: str,
    include_self: bool,
) -> np.ndarray:
    x0 = x.reshape(-1) if x.ndim == 0 else x
    index = index.reshape(-1) if x.ndim == 0 else index
    src = src.reshape(-1) if x.ndim == 0 else src
    axis %= x0.ndim
    y = x0.copy().reshape(-1)
    if index.size == 0:
        return y.reshape(x.shape)
    region = src[tuple(slice(0, n) for n in index.shape)].reshape(-1)
    where = _targets(x0, index, axis)
    if reduce == "none":
        # The last write wins: keep each target's last occurrence in row-major order.
        last = len(where) - 1 - np.unique(where[::-1], return_index=True)[1]
        y[where[last]] = region[last]
        return y.reshape(x.shape)
    touched = np.unique(where)
    if not include_self:
        y[touched] = _identity(reduce, y.dtype)
    ufunc = {
        "sum": np.add,
        "mean": np.add,
        "prod": np.multiply,
        "amax": np.maximum,
        "amin": np.minimum,
    }[reduce]
    with np.errstate(all="ignore"):  # integers wrap, NaN propagates: as in PyTorch
        ufunc.at(y, where, region)
        if reduce == "mean":
            count = np.bincount(where, minlength=y.size)[touched] + (1 if include_self else 0)
            if y.dtype.kind in "iu":
                y[touched] = np.floor_divide(y[touched], count.astype(y.dtype))
            else:
                y[touched] = (y[touched] / count).astype(y.dtype)
    return y.reshape(x.shape)


register(
    OpDef(
        name="scatter",
        conformance=grid(
            point("basic", shapes=((4, 5), (6, 5), (6, 5)), dtypes=("f32", "i64", "f32"),
                  values=("normal", "index:4", "normal"), axis=0),
            *(
                point(
                    "reduce",
                    shapes=((4, 5), (6, 5), (6, 5)),
                    dtypes=("f32", "i64", "f32"),
                    values=("normal", "index:4", "normal"),
                    axis=0,
                    reduce=reduce,
                    include_self=include_self,
                )
                for reduce in ("sum", "prod", "mean", "amax", "amin")
                for include_self in (True, False)
            ),
            point("integer_mean", shapes=((4, 5), (4, 3), (4, 3)), dtypes=("i64", "i64", "i64"),
                  values=("normal", "index:5", "normal"), axis=1, reduce="mean", label="int"),
        ),  # fmt: skip
        inputs=("x", "index", "src"),
        attrs=(
            Attr("axis", "int"),
            Attr(
                "reduce",
                "str",
                "none",
                "how values landing on one element combine",
                # reduce modes (torch's scatter_reduce(reduce=...)), not a group of ops
                choices=("none", "sum", "prod", "mean", "amax", "amin"),
            ),
            Attr("include_self", "bool", True, "x's own value takes part in the reduction"),
        ),
        infer=_scatter_infer,
        reference=_scatter,
        doc=(
            "y = copy of x; for every position p of index: y[p with dim axis = index[p]] <- "
            "src[p]. reduce='none' keeps the last value written (row-major over index); 'sum', "
            "'prod', 'amax', 'amin' combine them (with x's value when include_self, else "
            "starting from the identity) and 'mean' divides the sum by the count (integers: "
            "floor division). Elements no index reaches keep x's value. NaN propagates through "
            "amax/amin; integers wrap."
        ),
        category="indexing",
    )
)


def _slice_scatter_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict
) -> tuple[TensorType, ...]:
    x, src = types
    if src.dtype != x.dtype:
        raise ShapeError(f"op 'slice_scatter': src is {src.dtype.value} but x is {x.dtype.value}")
    axis = normalize_axis(attrs["axis"], x.rank)
    size = x.shape[axis]
    if not isinstance(size, int):
        raise ShapeError(f"op 'slice_scatter': dim {axis} of x must be static, got {x}")
    if attrs["step"] < 1:
        raise ShapeError(f"op 'slice_scatter': step must be >= 1, got {attrs['step']}")
    n = len(range(*slice(attrs["start"], attrs["end"], attrs["step"]).indices(size)))
    want = (*x.shape[:axis], n, *x.shape[axis + 1 :])
    if src.rank != x.rank or any(
        isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(src.shape, want)
    ):
        raise ShapeError(
            f"op 'slice_scatter': src [{format_shape(src.shape)}] must have the slice's shape "
            f"[{format_shape(want)}]"
        )
    return (TensorType(x.shape, x.dtype),)


def _slice_scatter(
    x: np.ndarray, src: np.ndarray, *, axis: int, start: int, end: int | None, step: int
) -> np.ndarray:
    y = x.copy()
    key = [slice(None)] * x.ndim
    key[axis] = slice(start, end, step)
    y[tuple(key)] = src
    return y


register(
    OpDef(
        name="slice_scatter",
        conformance=grid(
            point("step", shapes=((4, 6), (4, 2)), axis=1, start=1, end=5, step=2),
            point("negative_start", shapes=((5, 3), (2, 3)), axis=0, start=-2),
        ),  # fmt: skip
        inputs=("x", "src"),
        attrs=(
            Attr("axis", "int"),
            Attr("start", "int", 0),
            Attr("end", "int?", None, "None: to the end"),
            Attr("step", "int", 1),
        ),
        infer=_slice_scatter_infer,
        reference=_slice_scatter,
        doc=(
            "y = copy of x with y[.., start:end:step, ..] (dim axis; Python slice rules, "
            "negative bounds from the end) = src (torch.slice_scatter)"
        ),
        category="indexing",
    )
)
