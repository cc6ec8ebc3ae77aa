"""Division with rounding and the two remainders: ``floor_divide``, ``trunc_divide``, ``fmod``,
``remainder``.

Both operands broadcast and promote to one dtype (PyTorch's rule); float and integer tensors are
accepted. The formulas are PyTorch's CPU kernels, written out:

* ``trunc_divide``: floats ``trunc(a / b)``; integers C division (rounds toward zero).
* ``floor_divide``: floats follow ``div_floor_floating`` (``fmod``-based, so the result is the
  floor of the exact quotient, not of the rounded ``a / b``; ``b = 0`` gives ``a / b``);
  integers round toward minus infinity (Python's ``//``).
* ``fmod``: C ``fmod`` -- the remainder has the sign of ``a``.
* ``remainder``: Python's ``%`` -- the remainder has the sign of ``b``
  (``fmod(a, b) + b`` when the signs differ and ``fmod`` is nonzero).

Integer division or remainder by zero raises, as in PyTorch (``ZeroDivisionError``); float
division by zero follows IEEE (``x / 0 = +-inf``, ``0 / 0`` and ``fmod(x, 0)`` are NaN).
Integer overflow (``-128 // -1`` in i8) wraps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.errors import InterpretError
from cuvil_ref.ir.dtypes import DType, promote
from cuvil_ref.ops.elementwise import NUMERIC, broadcast_type
from cuvil_ref.ops.registry import OpDef, register


def _promoted(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = promote(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
        a, b = np.broadcast_arrays(a.astype(dtype, copy=False), b.astype(dtype, copy=False))
        if dtype.kind in "iu" and np.any(b == 0):
            raise InterpretError(f"integer division by zero ({fn.__name__.lstrip('_')})")
        with np.errstate(all="ignore"):
            return np.asarray(fn(a, b)).astype(dtype, copy=False)

    reference.__doc__ = fn.__doc__
    return reference


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "iu":  # floats, including bf16 (an ml_dtypes kind "V")
        return np.trunc(a / b)
    q = np.floor_divide(a, b)
    # floor and trunc differ when the quotient is negative and inexact: step toward zero
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(a.dtype)


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.floor_divide(a, b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    one = np.asarray(1, dtype=a.dtype)
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - one, div)
    floor = np.floor(div)
    floor = np.where(div - floor > np.asarray(0.5, dtype=a.dtype), floor + one, floor)
    zero = np.copysign(np.zeros_like(a), a / b)
    out = np.where(div != 0, floor, zero)
    return np.where(b == 0, a / b, out)


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    mod = np.fmod(a, b)
    if a.dtype.kind == "u":
        return mod
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


DIVISION: list[tuple[str, Callable[[np.ndarray, np.ndarray], np.ndarray], str]] = [
    (
        "trunc_divide",
        _trunc_divide,
        "y = a / b rounded toward zero (floats: trunc(a / b); ints: C division)",
    ),
    (
        "floor_divide",
        _floor_divide,
        "y = floor of a / b (floats: q = (a - fmod(a, b)) / b, minus 1 if fmod(a, b) != 0 and "
        "its sign differs from b's, then rounded to the nearest integer; b = 0 gives a / b; "
        "ints: Python's a // b)",
    ),
    ("fmod", _fmod, "y = a - trunc(a / b) * b, the C fmod: sign of a (floats: fmod(x, 0) = NaN)"),
    (
        "remainder",
        _remainder,
        "y = a - floor(a / b) * b, Python's %: m = fmod(a, b), plus b if m != 0 and the signs "
        "of m and b differ (floats: remainder(x, 0) = NaN)",
    ),
]

for _name, _fn, _formula in DIVISION:
    register(
        OpDef(
            name=_name,
            inputs=("a", "b"),
            infer=broadcast_type,
            reference=_promoted(_fn),
            doc=_formula + " (broadcasting, PyTorch type promotion; integer division by zero "
            "is an error)",
            category="elementwise",
            dtypes=NUMERIC,
            family="divide",
        )
    )
