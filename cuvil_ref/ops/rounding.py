"""Rounding and sign: ``ceil``, ``floor``, ``trunc``, ``round`` (half to even, with ``decimals``)
and ``sign``.

The rounding ops take float tensors (an integer tensor is already integral: the frontend passes
it through unchanged, as PyTorch returns it unchanged). NaN, infinities and signed zeros are kept
(``floor(-0.5) = -1``, ``ceil(-0.5) = -0.0``, ``round(-0.5) = -0.0``). ``sign`` also takes
integer tensors.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES
from cuvil_ref.ops.elementwise import same_type
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register


def _same_dtype(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return reference


for _name, _fn, _formula in [
    ("ceil", np.ceil, "y = the least integer >= x (ceil(-0.5) = -0.0)"),
    ("floor", np.floor, "y = the greatest integer <= x"),
    ("trunc", np.trunc, "y = x rounded toward zero (trunc(-0.5) = -0.0)"),
]:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=same_type,
            reference=_same_dtype(_fn),
            doc=_formula + "; NaN and +-inf unchanged",
            category="elementwise",
            dtypes=FLOAT_DTYPES,
        )
    )


def _round(x: np.ndarray, *, decimals: int) -> np.ndarray:
    """Half to even at ``10^-decimals``, computed in x's dtype as PyTorch does: for
    ``decimals >= 0`` ``rint(x * 10^d) / 10^d``, else ``rint(x / 10^-d) * 10^-d``."""
    with np.errstate(all="ignore"):
        if decimals == 0:
            return np.rint(x)
        scale = np.asarray(10.0 ** abs(decimals), dtype=x.dtype)
        if decimals > 0:
            return np.asarray(np.rint(x * scale) / scale, dtype=x.dtype)
        return np.asarray(np.rint(x / scale) * scale, dtype=x.dtype)


register(
    OpDef(
        name="round",
        inputs=("x",),
        attrs=(Attr("decimals", "int", 0, "number of decimal places (negative: tens, hundreds)"),),
        infer=same_type,
        reference=_round,
        doc="y = x rounded half to even to `decimals` places: rint(x * 10^d) / 10^d for d >= 0, "
        "rint(x / 10^-d) * 10^-d for d < 0, in x's dtype (so round(2.5) = 2, round(-0.5) = -0.0; "
        "a scaled value that overflows gives inf or NaN, as PyTorch)",
        category="elementwise",
        dtypes=FLOAT_DTYPES,
        conformance=grid(
            point(),
            point("decimals", decimals=2),
            point("decimals", decimals=-1),
            # exact halfway points: ties go to the even neighbour
            point("tie", shapes=((5, 8),), values="ties:1.0"),
        ),
    )
)


def _sign(x: np.ndarray) -> np.ndarray:
    """(x > 0) - (x < 0) in x's dtype: NaN and -0.0 give +0."""
    if x.dtype == np.bool_:
        return x.copy()
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


register(
    OpDef(
        name="sign",
        inputs=("x",),
        infer=same_type,
        reference=_sign,
        doc="y = 1 if x > 0, -1 if x < 0, else 0 (sign(NaN) = 0 and sign(-0.0) = +0, as PyTorch); "
        "bool is unchanged",
        category="elementwise",
        dtypes=ALL_DTYPES,
    )
)
