"""Element types of Cuvil tensors and their numpy equivalents.

bf16 uses the ``ml_dtypes`` numpy extension type, so bf16 arrays are real numpy arrays.
"""

from __future__ import annotations

import builtins
import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    """A tensor element type. The value is the name used in the textual IR."""

    f64 = "f64"
    f32 = "f32"
    f16 = "f16"
    bf16 = "bf16"
    i8 = "i8"
    u8 = "u8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    bool = "bool"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype that stores this type."""
        return _TO_NUMPY[self]

    @property
    def is_float(self) -> builtins.bool:  # (`bool` is a member here)
        return self in FLOAT_DTYPES

    @property
    def is_int(self) -> builtins.bool:
        return self in INT_DTYPES

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    def __repr__(self) -> str:
        return f"DType.{self.value}"

    @staticmethod
    def from_numpy(dtype: np.dtype | type) -> DType:
        """The DType of a numpy dtype; raises ``ValueError`` naming the supported ones."""
        key = np.dtype(dtype)
        try:
            return _FROM_NUMPY[key]
        except KeyError:
            names = ", ".join(str(d) for d in _FROM_NUMPY)
            raise ValueError(f"numpy dtype {key} has no Cuvil dtype; supported: {names}") from None

    @staticmethod
    def parse(name: str) -> DType:
        """The DType named ``name`` in the textual IR (``f32``, ``i8``...)."""
        try:
            return DType(name)
        except ValueError:
            names = ", ".join(d.value for d in DType)
            raise ValueError(f"unknown dtype {name!r}; expected one of {names}") from None


_TO_NUMPY: dict[DType, np.dtype] = {
    DType.f64: np.dtype(np.float64),
    DType.f32: np.dtype(np.float32),
    DType.f16: np.dtype(np.float16),
    DType.bf16: np.dtype(ml_dtypes.bfloat16),
    DType.i8: np.dtype(np.int8),
    DType.u8: np.dtype(np.uint8),
    DType.i16: np.dtype(np.int16),
    DType.i32: np.dtype(np.int32),
    DType.i64: np.dtype(np.int64),
    DType.bool: np.dtype(np.bool_),
}
_FROM_NUMPY: dict[np.dtype, DType] = {v: k for k, v in _TO_NUMPY.items()}

FLOAT_DTYPES = frozenset({DType.f64, DType.f32, DType.f16, DType.bf16})
INT_DTYPES = frozenset({DType.i8, DType.u8, DType.i16, DType.i32, DType.i64})
ALL_DTYPES = frozenset(DType)

# PyTorch's promotion order among the types we support (bool < ints < floats).
_PROMOTION_RANK = {
    DType.bool: 0,
    DType.u8: 1,
    DType.i8: 1,
    DType.i16: 2,
    DType.i32: 3,
    DType.i64: 4,
    DType.f16: 5,
    DType.bf16: 5,
    DType.f32: 6,
    DType.f64: 7,
}


def promote(a: DType, b: DType) -> DType:
    """Result type of a binary op on tensors of types ``a`` and ``b``, following PyTorch.

    Mixed f16/bf16 promotes to f32 and mixed i8/u8 to i16, as in PyTorch.
    """
    if a == b:
        return a
    if {a, b} == {DType.f16, DType.bf16}:
        return DType.f32
    if {a, b} == {DType.i8, DType.u8}:
        return DType.i16
    return a if _PROMOTION_RANK[a] >= _PROMOTION_RANK[b] else b
