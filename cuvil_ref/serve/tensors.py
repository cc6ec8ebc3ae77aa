"""Tensors on the wire: protocol datatypes, JSON tensor data and Triton's binary extension.

The Open Inference Protocol names element types ``FP32``, ``INT8``...; JSON requests carry the
data as a (possibly nested) list in row-major order; Triton's binary tensor data extension sends
the raw little-endian bytes after the JSON header (``Inference-Header-Content-Length`` gives the
header's length; each binary input has ``parameters.binary_data_size``). Decoding checks the
element count and byte size against the declared shape, so a truncated payload is a 400 naming
the tensor, not a numpy error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.serve.errors import InvalidRequest

#: protocol datatype -> numpy dtype (little-endian)
DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype("<i2"),
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FP16": np.dtype("<f2"),
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
}

_FROM_IR: dict[DType, str] = {
    DType.f32: "FP32",
    DType.f16: "FP16",
    DType.bf16: "BF16",
    DType.i8: "INT8",
    DType.u8: "UINT8",
    DType.i32: "INT32",
    DType.i64: "INT64",
    DType.bool: "BOOL",
}


def datatype_of(dtype: DType) -> str:
    """The protocol datatype of an IR dtype."""
    return _FROM_IR[dtype]


def numpy_of(datatype: str, tensor: str) -> np.dtype:
    """The numpy dtype of a protocol datatype; 400 naming the tensor for an unknown one."""
    try:
        return DATATYPES[datatype]
    except (KeyError, TypeError):
        raise InvalidRequest(
            f"input '{tensor}': unknown datatype {datatype!r}; the protocol's datatypes are "
            f"{', '.join(DATATYPES)} (BYTES is not supported by Cuvil models)"
        ) from None


def check_shape(shape: Any, tensor: str) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or any(
        isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape
    ):
        raise InvalidRequest(
            f"input '{tensor}': shape must be a list of non-negative integers, got {shape!r}"
        )
    return tuple(int(d) for d in shape)


def from_json_data(data: Any, datatype: str, shape: tuple[int, ...], tensor: str) -> np.ndarray:
    """Decode JSON tensor data (flat or nested, row-major) into an array of ``shape``."""
    dtype = numpy_of(datatype, tensor)
    try:
        flat = np.asarray(data)
    except (ValueError, TypeError, OverflowError):
        flat = np.asarray([], dtype=object)  # ragged nesting: refused below
    if flat.dtype.kind not in "biuf":
        raise InvalidRequest(
            f"input '{tensor}': data must be a (nested) list of numbers for {datatype}"
        )
    count = int(np.prod(shape)) if shape else 1
    if flat.size != count:
        raise InvalidRequest(
            f"input '{tensor}': shape {list(shape)} holds {count} elements but data has {flat.size}"
        )
    if datatype == "BOOL":
        if flat.dtype != np.bool_:
            raise InvalidRequest(f"input '{tensor}': BOOL data must be true/false")
    elif dtype.kind in "iu":
        if flat.dtype.kind not in "iub":
            raise InvalidRequest(f"input '{tensor}': {datatype} data must be integers")
        info = np.iinfo(dtype)
        if flat.size and (flat.min() < info.min or flat.max() > info.max):
            raise InvalidRequest(
                f"input '{tensor}': values outside the range of {datatype} [{info.min}, {info.max}]"
            )
    return flat.astype(dtype).reshape(shape)


def from_bytes(
    raw: bytes | memoryview, datatype: str, shape: tuple[int, ...], tensor: str
) -> np.ndarray:
    """Decode raw little-endian bytes (binary extension or gRPC raw contents)."""
    dtype = numpy_of(datatype, tensor)
    count = int(np.prod(shape)) if shape else 1
    if len(raw) != count * dtype.itemsize:
        raise InvalidRequest(
            f"input '{tensor}': {len(raw)} bytes of binary data, but shape {list(shape)} of "
            f"{datatype} needs {count * dtype.itemsize}"
        )
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


def to_json_data(array: np.ndarray) -> list[Any]:
    """Flat row-major list (the protocol's JSON form)."""
    a = np.asarray(array)
    if a.dtype == DATATYPES["BF16"] or a.dtype == np.float16:
        a = a.astype(np.float32)
    return a.reshape(-1).tolist()


def to_bytes(array: np.ndarray) -> bytes:
    a = np.ascontiguousarray(array)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def split_binary(body: bytes, header_length: Any) -> tuple[bytes, memoryview]:
    """(JSON header, binary tail) of a request with the binary extension."""
    try:
        n = int(header_length)
    except (TypeError, ValueError):
        raise InvalidRequest(
            f"Inference-Header-Content-Length must be an integer, got {header_length!r}"
        ) from None
    if n < 0 or n > len(body):
        raise InvalidRequest(
            f"Inference-Header-Content-Length is {n} but the body has {len(body)} bytes"
        )
    view = memoryview(body)
    return bytes(view[:n]), view[n:]


def shape_text(shape: Sequence[Any]) -> str:
    return "[" + ", ".join("-1" if not isinstance(d, int) else str(d) for d in shape) + "]"
