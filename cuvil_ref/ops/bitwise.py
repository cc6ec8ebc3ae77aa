"""Bitwise ops on integer and bool tensors: ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``
(broadcasting, PyTorch type promotion) and ``bitwise_not``.

Signed integers are two's complement (``bitwise_not(x) = -x - 1``); on bool tensors the ops are
the logical ones (``bitwise_not(True) = False``). Float tensors are refused, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.dtypes import INT_DTYPES, DType, promote
from cuvil_ref.ops.elementwise import broadcast_type, same_type
from cuvil_ref.ops.registry import OpDef, register

INTEGRAL = frozenset(INT_DTYPES | {DType.bool})


def _promoted(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = promote(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
        return np.asarray(fn(a.astype(dtype, copy=False), b.astype(dtype, copy=False)))

    return reference


for _name, _fn, _formula in [
    ("bitwise_and", np.bitwise_and, "y = a & b"),
    ("bitwise_or", np.bitwise_or, "y = a | b"),
    ("bitwise_xor", np.bitwise_xor, "y = a ^ b"),
]:
    register(
        OpDef(
            name=_name,
            inputs=("a", "b"),
            infer=broadcast_type,
            reference=_promoted(_fn),
            doc=_formula + " bit by bit (two's complement; logical on bool; broadcasting, "
            "PyTorch type promotion)",
            category="elementwise",
            dtypes=INTEGRAL,
        )
    )


def _bitwise_not(x: np.ndarray) -> np.ndarray:
    return np.invert(x)


register(
    OpDef(
        name="bitwise_not",
        inputs=("x",),
        infer=same_type,
        reference=_bitwise_not,
        doc="y = ~x bit by bit (two's complement: ~x = -x - 1; logical not on bool)",
        category="elementwise",
        dtypes=INTEGRAL,
    )
)
