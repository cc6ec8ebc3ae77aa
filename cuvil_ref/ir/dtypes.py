"""Element types of Cuvil tensors and their numpy equivalents.

bf16 uses the ``ml_dtypes`` numpy extension type, so bf16 arrays are real numpy arrays.

The *storage* types -- the float8 formats, float4 and the 4- and 2-bit integers, also from
``ml_dtypes`` -- hold data that models (ONNX, quantized checkpoints) carry in those formats.
They are not in ``ALL_DTYPES``: an op accepts them only where its declaration lists them (``cast``
converts to and from them; computation happens in a compute type).
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
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    f8e4m3fn = "f8e4m3fn"
    f8e4m3fnuz = "f8e4m3fnuz"
    f8e5m2 = "f8e5m2"
    f8e5m2fnuz = "f8e5m2fnuz"
    f8e8m0 = "f8e8m0"
    f4e2m1 = "f4e2m1"
    i4 = "i4"
    u4 = "u4"
    i2 = "i2"
    u2 = "u2"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype that stores this type."""
        return _TO_NUMPY[self]

    @property
    def is_float(self) -> builtins.bool:  # (`bool` is a member here)
        return self in FLOAT_DTYPES or self in STORAGE_FLOAT_DTYPES

    @property
    def is_int(self) -> builtins.bool:
        return self in INT_DTYPES or self in STORAGE_INT_DTYPES

    @property
    def is_storage(self) -> builtins.bool:
        """A storage-only type (float8, float4, 4-/2-bit ints): not computed in."""
        return self in STORAGE_DTYPES

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
    DType.u16: np.dtype(np.uint16),
    DType.u32: np.dtype(np.uint32),
    DType.u64: np.dtype(np.uint64),
    DType.f8e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.f8e4m3fnuz: np.dtype(ml_dtypes.float8_e4m3fnuz),
    DType.f8e5m2: np.dtype(ml_dtypes.float8_e5m2),
    DType.f8e5m2fnuz: np.dtype(ml_dtypes.float8_e5m2fnuz),
    DType.f8e8m0: np.dtype(ml_dtypes.float8_e8m0fnu),
    DType.f4e2m1: np.dtype(ml_dtypes.float4_e2m1fn),
    DType.i4: np.dtype(ml_dtypes.int4),
    DType.u4: np.dtype(ml_dtypes.uint4),
    DType.i2: np.dtype(ml_dtypes.int2),
    DType.u2: np.dtype(ml_dtypes.uint2),
}
_FROM_NUMPY: dict[np.dtype, DType] = {v: k for k, v in _TO_NUMPY.items()}

FLOAT_DTYPES = frozenset({DType.f64, DType.f32, DType.f16, DType.bf16})
INT_DTYPES = frozenset(
    {DType.i8, DType.u8, DType.i16, DType.i32, DType.i64, DType.u16, DType.u32, DType.u64}
)
STORAGE_FLOAT_DTYPES = frozenset(
    {DType.f8e4m3fn, DType.f8e4m3fnuz, DType.f8e5m2, DType.f8e5m2fnuz, DType.f8e8m0, DType.f4e2m1}
)
STORAGE_INT_DTYPES = frozenset({DType.i4, DType.u4, DType.i2, DType.u2})
STORAGE_DTYPES = STORAGE_FLOAT_DTYPES | STORAGE_INT_DTYPES
#: The types ops compute in (every op accepts these unless its declaration narrows them).
ALL_DTYPES = frozenset(DType) - STORAGE_DTYPES

# PyTorch's promotion order among the types we support (bool < ints < floats).
_PROMOTION_RANK = {
    DType.bool: 0,
    DType.u8: 1,
    DType.i8: 1,
    DType.i16: 2,
    DType.i32: 3,
    DType.u16: 2,
    DType.u32: 3,
    DType.i64: 4,
    DType.u64: 4,
    DType.f16: 5,
    DType.bf16: 5,
    DType.f32: 6,
    DType.f64: 7,
}


def promote(a: DType, b: DType) -> DType:
    """Result type of a binary op on tensors of types ``a`` and ``b``, following PyTorch.

    Mixed f16/bf16 promotes to f32 and mixed i8/u8 to i16, as in PyTorch; a wider unsigned type
    (u16, u32, u64) with a signed one promotes as numpy does (u64 with a signed type: f64).
    Storage types do not promote: they are cast to a compute type first.
    """
    if a == b:
        return a
    if a.is_storage or b.is_storage:
        raise ValueError(f"no arithmetic promotion for storage type {a.value} with {b.value}")
    wide = {DType.u16, DType.u32, DType.u64}
    if (a in wide or b in wide) and not (a.is_float or b.is_float) and DType.bool not in (a, b):
        return DType.from_numpy(np.promote_types(a.numpy, b.numpy))
    if {a, b} == {DType.f16, DType.bf16}:
        return DType.f32
    if {a, b} == {DType.i8, DType.u8}:
        return DType.i16
    return a if _PROMOTION_RANK[a] >= _PROMOTION_RANK[b] else b
