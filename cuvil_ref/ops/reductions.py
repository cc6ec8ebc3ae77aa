"""Reductions over axes (sum, mean, prod, amax, amin, var, std, argmax, argmin) and softmax.

Axis conventions follow PyTorch: ``axes=None`` (or ``()``) reduces every axis, negative axes count
from the end, ``keepdim`` keeps reduced axes as size 1, and a rank-0 tensor accepts axis 0 or -1
(reducing nothing). Symbolic dims on kept axes stay symbolic; reducing a symbolic axis is fine.

Float sums, means, products and variances accumulate in float64 and round once to the output dtype
(at least as accurate as PyTorch's f32 cascade sums). Over an empty axis: sum = 0, prod = 1,
mean = var = NaN; amax/amin/argmax/argmin raise :class:`ShapeError`, as PyTorch does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType
from cuvil_ref.ops.activations import opmath
from cuvil_ref.ops.elementwise import NUMERIC, same_type
from cuvil_ref.ops.grid import Conformance, GridPoint, grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import normalize_axes, normalize_axis

AXES = Attr("axes", "ints?", None, "axes to reduce; None or () reduces all")
KEEPDIM = Attr("keepdim", "bool", False, "keep reduced axes as size 1")


def reduce_axes(axes: Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Normalized axes to reduce; for rank 0 only axis 0 / -1 is legal and nothing is reduced."""
    if rank == 0:
        for a in axes or ():
            if a not in (0, -1):
                raise ShapeError(f"axis {a} is out of range for a rank-0 tensor (use 0 or -1)")
        return ()
    return normalize_axes(axes, rank)


def reduced_shape(shape: Sequence[Dim], axes: tuple[int, ...], keepdim: bool) -> tuple[Dim, ...]:
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _accumulator_dtype(dtype: DType) -> DType:
    """Sum/prod result type, as PyTorch: floats keep their type, ints and bool give i64."""
    return dtype if dtype.is_float else DType.i64


def _reduce_infer(*, nonempty: bool = False, int_to_i64: bool = False) -> Callable[..., Any]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        x = types[0]
        axes = reduce_axes(attrs["axes"], x.rank)
        if nonempty:
            for a in axes:
                if x.shape[a] == 0:
                    raise ShapeError(f"cannot reduce over axis {a} of size 0 (it has no elements)")
        dtype = _accumulator_dtype(x.dtype) if int_to_i64 else x.dtype
        return (TensorType(reduced_shape(x.shape, axes, attrs["keepdim"]), dtype),)

    return infer


def _wide(x: np.ndarray) -> np.ndarray:
    """float64 for any float input, int64 for ints and bool: the accumulator of sum/prod/mean."""
    if x.dtype.kind in "biu":
        return x.astype(np.int64)
    return x.astype(np.float64)


def _out_dtype(x: np.ndarray) -> np.dtype:
    return _accumulator_dtype(DType.from_numpy(x.dtype)).numpy


def _count(shape: Sequence[int], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _sum(x: np.ndarray, *, axes: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """y = sum of x over axes (0 over an empty axis)."""
    ax = reduce_axes(axes, x.ndim)
    with np.errstate(all="ignore"):
        return np.asarray(np.sum(_wide(x), axis=ax, keepdims=keepdim)).astype(_out_dtype(x))


def _prod(x: np.ndarray, *, axes: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """y = product of x over axes (1 over an empty axis)."""
    ax = reduce_axes(axes, x.ndim)
    with np.errstate(all="ignore"):
        return np.asarray(np.prod(_wide(x), axis=ax, keepdims=keepdim)).astype(_out_dtype(x))


def _mean(x: np.ndarray, *, axes: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """y = sum(x) / N over axes (NaN when N = 0)."""
    ax = reduce_axes(axes, x.ndim)
    with np.errstate(all="ignore"):
        s = np.sum(x.astype(np.float64), axis=ax, keepdims=keepdim)
        return np.asarray(s / _count(x.shape, ax)).astype(x.dtype)


def _variance(x: np.ndarray, ax: tuple[int, ...], correction: float, keepdim: bool) -> np.ndarray:
    n = _count(x.shape, ax)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        mean = np.sum(x64, axis=ax, keepdims=True) / n
        m2 = np.sum(np.square(x64 - mean), axis=ax, keepdims=keepdim)
        return m2 / max(0, n - correction)


def _var(
    x: np.ndarray, *, axes: tuple[int, ...] | None, correction: float, keepdim: bool
) -> np.ndarray:
    """y = sum((x - mean)^2) / max(0, N - correction)."""
    ax = reduce_axes(axes, x.ndim)
    return np.asarray(_variance(x, ax, correction, keepdim)).astype(x.dtype)


def _std(
    x: np.ndarray, *, axes: tuple[int, ...] | None, correction: float, keepdim: bool
) -> np.ndarray:
    """y = sqrt(var(x))."""
    ax = reduce_axes(axes, x.ndim)
    with np.errstate(all="ignore"):
        return np.asarray(np.sqrt(_variance(x, ax, correction, keepdim))).astype(x.dtype)


def _extreme(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(x: np.ndarray, *, axes: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
        ax = reduce_axes(axes, x.ndim)
        if any(x.shape[a] == 0 for a in ax):
            raise ShapeError(f"cannot reduce shape {list(x.shape)} over an empty axis in {ax}")
        return np.asarray(fn(x, axis=ax, keepdims=keepdim)).astype(x.dtype, copy=False)

    return reference


CORRECTION = Attr(
    "correction", "float", 1.0, "subtracted from N in the divisor (1: unbiased; may be fractional)"
)

# (name, reference, formula, dtypes, infer, extra attrs)
REDUCTIONS: list[tuple[str, Callable[..., Any], str, frozenset[DType], Any, tuple[Attr, ...]]] = [
    (
        "sum",
        _sum,
        "y = sum_{axes} x; ints and bool give i64 (wrapping), sum over nothing = 0",
        ALL_DTYPES,
        _reduce_infer(int_to_i64=True),
        (),
    ),
    (
        "prod",
        _prod,
        "y = prod_{axes} x; ints and bool give i64 (wrapping), prod over nothing = 1",
        ALL_DTYPES,
        _reduce_infer(int_to_i64=True),
        (),
    ),
    ("mean", _mean, "y = sum_{axes} x / N; N = 0 gives NaN", FLOAT_DTYPES, _reduce_infer(), ()),
    (
        "amax",
        _extreme(np.max),
        "y = max_{axes} x; NaN if any element is NaN; an empty axis is an error",
        ALL_DTYPES,
        _reduce_infer(nonempty=True),
        (),
    ),
    (
        "amin",
        _extreme(np.min),
        "y = min_{axes} x; NaN if any element is NaN; an empty axis is an error",
        ALL_DTYPES,
        _reduce_infer(nonempty=True),
        (),
    ),
    (
        "var",
        _var,
        "y = sum_{axes} (x - mean)^2 / max(0, N - correction) (N - correction <= 0 gives "
        "inf, or NaN when the sum is 0, as PyTorch)",
        FLOAT_DTYPES,
        _reduce_infer(),
        (CORRECTION,),
    ),
    (
        "std",
        _std,
        "y = sqrt(var(x, axes, correction))",
        FLOAT_DTYPES,
        _reduce_infer(),
        (CORRECTION,),
    ),
]


def _axes_grid(*extra: GridPoint, domain: str = "any") -> Conformance:
    """Every axis form (all, one, negative, several) with and without keepdim, plus ``extra``."""
    forms = [None, (0,), (-1,), (0, 2), (1,)]
    points = [point("axes", axes=a, keepdim=False) for a in forms]
    points += [point("keepdim", axes=a, keepdim=True) for a in forms]
    points += [
        point("rank0", axes=None, shapes=((),)),
        point("rank5", axes=(1, 3), shapes=((2, 3, 2, 2, 3),)),
        *extra,
    ]
    return grid(*points, domain=domain)


def _reduce_twin(name: str) -> Callable[..., Any]:
    """torch.<name>(x, dim, keepdim) with Cuvil's ``axes=None`` meaning every axis."""

    def twin(torch: Any, x: Any, *, axes: Any, keepdim: bool, **extra: Any) -> Any:
        dims = tuple(range(x.dim())) if not axes else tuple(axes)
        if name in ("var", "std"):
            return getattr(torch, name)(x, dim=dims or None, keepdim=keepdim, **extra)
        return getattr(torch, name)(x, dim=dims, keepdim=keepdim)

    return twin


_EMPTY = point("empty", axes=(1,), shapes=((2, 0, 3),))
#: Per-op knowledge beyond the table rows (grid, tolerance where not 'reduction', torch twin).
EXTRA: dict[str, dict[str, Any]] = {
    "sum": {"conformance": _axes_grid(_EMPTY), "torch_twin": _reduce_twin("sum")},
    "prod": {"conformance": _axes_grid(_EMPTY, domain="unit"), "torch_twin": None},
    "mean": {"conformance": _axes_grid(_EMPTY), "torch_twin": _reduce_twin("mean")},
    "amax": {"tolerance": "exact", "conformance": _axes_grid(), "torch_twin": _reduce_twin("amax")},
    "amin": {"tolerance": "exact", "conformance": _axes_grid(), "torch_twin": _reduce_twin("amin")},
}
_VAR_GRID = grid(
    *(point("correction", axes=a, correction=c) for a in ((1,), None, (0,)) for c in (0, 1)),
    # mean 1000, std 0.01 over 768 elements: E[x^2] - E[x]^2 in f32 loses every digit
    point("low_variance", axes=(1,), correction=1, shapes=((4, 768),), values="lowvar:1000"),
)

for _name, _ref, _formula, _dtypes, _infer, _extra in REDUCTIONS:
    _more = EXTRA.get(_name) or {"conformance": _VAR_GRID, "torch_twin": _reduce_twin(_name)}
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=_infer,
            reference=_ref,
            doc=_formula,
            attrs=(AXES, *_extra, KEEPDIM),
            category="reduction",
            dtypes=_dtypes,
            family="reduce" if not _extra else "reduce_var",
            **_more,
        )
    )


def _arg_axis(axis: int | None, rank: int) -> int | None:
    if axis is None:
        return None
    if rank == 0:
        reduce_axes((axis,), 0)
        return None
    return normalize_axis(axis, rank)


def _arg_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    axis = _arg_axis(attrs["axis"], x.rank)
    axes = tuple(range(x.rank)) if axis is None else (axis,)
    if any(x.shape[a] == 0 for a in axes):
        raise ShapeError(f"cannot take the index of an extreme over an empty axis of {x}")
    return (TensorType(reduced_shape(x.shape, axes, attrs["keepdim"]), DType.i64),)


def _arg_extreme(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(x: np.ndarray, *, axis: int | None, keepdim: bool) -> np.ndarray:
        ax = _arg_axis(axis, x.ndim)
        if (x.size if ax is None else x.shape[ax]) == 0:
            raise ShapeError(
                f"cannot take the index of an extreme over an empty axis of shape {list(x.shape)}"
            )
        if ax is None:
            index = np.asarray(fn(x.reshape(-1)), dtype=np.int64)
            return index.reshape((1,) * x.ndim) if keepdim else index
        return np.asarray(fn(x, axis=ax, keepdims=keepdim), dtype=np.int64)

    return reference


def _arg_twin(name: str) -> Callable[..., Any]:
    def twin(torch: Any, x: Any, *, axis: int | None, keepdim: bool) -> Any:
        return getattr(torch, name)(x, dim=axis, keepdim=keepdim)

    return twin


_ARG_GRID = grid(
    *(point("axis", axis=a, keepdim=k) for a in (None, 0, -1) for k in (False, True)),
    # whole-number values in [-3, 3]: every row has ties, the first index must win
    point("tie", axis=1, shapes=((5, 7),), values="small"),
    point("tie", axis=None, shapes=((4, 6),), values="small"),
    # one NaN per row: NaN counts as the extreme (not skipped)
    point("nan_one_operand", axis=1, shapes=((4, 6),), values="nan_one:6"),
)

for _name, _fn, _what in [("argmax", np.argmax, "max"), ("argmin", np.argmin, "min")]:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=_arg_infer,
            reference=_arg_extreme(_fn),
            doc=f"y = index (i64) of the first {_what} of x along axis (the flattened x if axis "
            f"is None; keepdim then gives all-ones shape); NaN counts as the {_what}",
            attrs=(
                Attr("axis", "int?", None, "axis to search; None searches the flattened tensor"),
                KEEPDIM,
            ),
            category="reduction",
            dtypes=NUMERIC,
            family="reduce_arg",
            tolerance="exact",
            torch_twin=_arg_twin(_name),
            conformance=_ARG_GRID,
        )
    )


def _softmax_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    reduce_axes((attrs["axis"],), types[0].rank)
    return same_type(types, attrs)


def _softmax_parts(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(x - max, sum(exp(x - max))) along ``axis``, in opmath; all -inf rows give NaN.

    A rank-0 tensor is treated as one row of length 1.
    """
    if x.ndim == 0:
        reduce_axes((axis,), 0)  # validates axis (0 or -1)
        axis = 0
    xf = opmath(x).reshape(x.shape or (1,))
    ax = normalize_axis(axis, xf.ndim)
    if xf.shape[ax] == 0:
        return xf, xf
    shifted = xf - np.max(xf, axis=ax, keepdims=True)
    return shifted, np.sum(np.exp(shifted), axis=ax, keepdims=True)


def _softmax(x: np.ndarray, *, axis: int) -> np.ndarray:
    """y = exp(x - max) / sum(exp(x - max)) along axis."""
    with np.errstate(all="ignore"):
        shifted, total = _softmax_parts(x, axis)
        return (np.exp(shifted) / total).astype(x.dtype).reshape(x.shape)


def _log_softmax(x: np.ndarray, *, axis: int) -> np.ndarray:
    """y = (x - max) - log(sum(exp(x - max))) along axis."""
    with np.errstate(all="ignore"):
        shifted, total = _softmax_parts(x, axis)
        return (shifted - np.log(total)).astype(x.dtype).reshape(x.shape)


def _softmax_twin(name: str) -> Callable[..., Any]:
    def twin(torch: Any, x: Any, *, axis: int) -> Any:
        return getattr(torch, name)(x, dim=axis)

    return twin


_SOFTMAX_GRID = grid(
    point("axis", axis=-1, shapes=((2, 5),)),
    point("axis", axis=1, shapes=((3, 4, 6),)),
    point("axis", axis=0, shapes=((2, 3, 4),)),
    point("axis", axis=0, shapes=((7,),)),
    point("axis", axis=-1, shapes=((1, 1, 9),)),
    point("f16", axis=-1, shapes=((3, 8),), dtypes="f16"),
    # logits near 1e3..1e4: exp overflows unless the row maximum is subtracted first
    point("large_logits", axis=-1, shapes=((4, 16),), values="large:1000"),
    point("large_logits", axis=-1, shapes=((3, 33),), values="large:10000"),
    point("nan_one_operand", axis=-1, shapes=((4, 6),), values="nan_one:6"),
    point("edge", axis=-1, shapes=((4, 6),), values="edge"),
)

for _name, _ref, _formula in [
    ("softmax", _softmax, "y_i = e^(x_i - m) / sum_j e^(x_j - m), m = max_j x_j"),
    ("log_softmax", _log_softmax, "y_i = (x_i - m) - log(sum_j e^(x_j - m)), m = max_j x_j"),
]:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=_softmax_infer,
            reference=_ref,
            doc=_formula + " along axis (numerically stable; a row of all -inf, or one holding "
            "+inf or NaN, gives NaN everywhere as in PyTorch)",
            attrs=(Attr("axis", "int", -1, "the axis to normalize over"),),
            category="reduction",
            dtypes=FLOAT_DTYPES,
            family="softmax",
            torch_twin=_softmax_twin(_name),
            conformance=_SOFTMAX_GRID,
        )
    )
