"""Comparisons and logical ops: broadcasting inputs, bool output.

Both operands are promoted to a common type first (PyTorch's rule). IEEE semantics: any
comparison with NaN is false except ``ne``, which is true; -0.0 equals +0.0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.dtypes import ALL_DTYPES, DType, promote
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.grid import torch_fn
from cuvil_ref.ops.registry import OpDef, register
from cuvil_ref.ops.shapes import broadcast_shapes


def _bool_broadcast(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    return (TensorType(broadcast_shapes(*(t.shape for t in types)), DType.bool),)


def _bool_same(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    return (TensorType(types[0].shape, DType.bool, types[0].layout),)


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = promote(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
        with np.errstate(invalid="ignore"):
            return np.asarray(fn(a.astype(dtype, copy=False), b.astype(dtype, copy=False)))

    return reference


COMPARISONS: list[tuple[str, Callable[[np.ndarray, np.ndarray], np.ndarray], str]] = [
    ("eq", np.equal, "y = (a == b)"),
    ("ne", np.not_equal, "y = (a != b); true when either is NaN"),
    ("lt", np.less, "y = (a < b)"),
    ("le", np.less_equal, "y = (a <= b)"),
    ("gt", np.greater, "y = (a > b)"),
    ("ge", np.greater_equal, "y = (a >= b)"),
    ("logical_and", np.logical_and, "y = (a != 0) and (b != 0)"),
    ("logical_or", np.logical_or, "y = (a != 0) or (b != 0)"),
    ("logical_xor", np.logical_xor, "y = (a != 0) xor (b != 0)"),
]

for _name, _fn, _formula in COMPARISONS:
    register(
        OpDef(
            name=_name,
            inputs=("a", "b"),
            infer=_bool_broadcast,
            reference=_compare(_fn),
            doc=_formula + " (broadcasting; bool result; NaN compares unequal to everything)",
            category="elementwise",
            dtypes=ALL_DTYPES,
            tolerance="exact",
            torch_twin=torch_fn(_name),
        )
    )


def _logical_not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x)


def _isnan(x: np.ndarray) -> np.ndarray:
    return np.isnan(x)


def _isinf(x: np.ndarray) -> np.ndarray:
    return np.isinf(x)


for _name, _fn, _formula, _dtypes in [
    ("logical_not", _logical_not, "y = (x == 0)", ALL_DTYPES),
    ("isnan", _isnan, "y = x is NaN (always false for integer and bool x)", ALL_DTYPES),
    ("isinf", _isinf, "y = x is +inf or -inf (always false for integer and bool x)", ALL_DTYPES),
]:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=_bool_same,
            reference=_fn,
            doc=_formula + " (bool result)",
            category="elementwise",
            dtypes=_dtypes,
            tolerance="exact",
            torch_twin=torch_fn(_name),
        )
    )
