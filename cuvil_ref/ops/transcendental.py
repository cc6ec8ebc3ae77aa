"""Unary float math beyond the basics: trigonometric and hyperbolic functions and their inverses,
``expm1``/``log1p``/``log2``/``log10``, ``reciprocal``, and the binary ``atan2``.

Trivial ops, one table row each: (name, numpy function, formula). Every op takes and returns a
float dtype; f16/bf16 are computed in f32 and rounded once, as PyTorch's CPU kernels do. Inputs
outside an op's domain give NaN (``asin(2)``, ``log1p(-2)``), poles give infinities
(``atanh(1) = inf``, ``reciprocal(-0.0) = -inf``), exactly as IEEE math and PyTorch. Integer
tensors are promoted to float by the frontend (PyTorch's rule), not here.

``expm1`` and ``log1p`` are their own ops on purpose: ``exp(x) - 1`` and ``log(1 + x)`` lose all
precision for small ``x``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.dtypes import FLOAT_DTYPES, DType, promote
from cuvil_ref.ops.activations import opmath
from cuvil_ref.ops.elementwise import broadcast_type, same_type
from cuvil_ref.ops.registry import OpDef, register


def _in_opmath(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A reference evaluating ``fn`` in opmath (f16/bf16 widen to f32) and rounding once."""

    def reference(*xs: np.ndarray) -> np.ndarray:
        dtype = DType.from_numpy(xs[0].dtype)
        for x in xs[1:]:
            dtype = promote(dtype, DType.from_numpy(x.dtype))
        with np.errstate(all="ignore"):
            y = fn(*(opmath(x.astype(dtype.numpy, copy=False)) for x in xs))
            return np.asarray(y).astype(dtype.numpy, copy=False)

    return reference


def _reciprocal(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0, dtype=x.dtype) / x


UNARY: list[tuple[str, Callable[[np.ndarray], np.ndarray], str]] = [
    ("sin", np.sin, "y = sin(x) (x in radians; sin(+-inf) = NaN)"),
    ("cos", np.cos, "y = cos(x) (x in radians; cos(+-inf) = NaN)"),
    ("tan", np.tan, "y = tan(x) (x in radians; tan(+-inf) = NaN)"),
    ("asin", np.arcsin, "y = arcsin(x) in [-pi/2, pi/2]; NaN for |x| > 1"),
    ("acos", np.arccos, "y = arccos(x) in [0, pi]; NaN for |x| > 1"),
    ("atan", np.arctan, "y = arctan(x) in (-pi/2, pi/2); atan(+-inf) = +-pi/2"),
    ("sinh", np.sinh, "y = (e^x - e^-x) / 2"),
    ("cosh", np.cosh, "y = (e^x + e^-x) / 2"),
    ("asinh", np.arcsinh, "y = ln(x + sqrt(x^2 + 1))"),
    ("acosh", np.arccosh, "y = ln(x + sqrt(x^2 - 1)); NaN for x < 1"),
    ("atanh", np.arctanh, "y = ln((1 + x) / (1 - x)) / 2; +-inf at +-1, NaN for |x| > 1"),
    ("expm1", np.expm1, "y = e^x - 1, accurate for small |x|"),
    ("log1p", np.log1p, "y = ln(1 + x), accurate for small |x|; -inf at -1, NaN below"),
    ("log2", np.log2, "y = log_2 x (log2 0 = -inf, NaN for x < 0)"),
    ("log10", np.log10, "y = log_10 x (log10 0 = -inf, NaN for x < 0)"),
    ("reciprocal", _reciprocal, "y = 1 / x (1/+-0 = +-inf)"),
]

for _name, _fn, _formula in UNARY:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=same_type,
            reference=_in_opmath(_fn),
            doc=_formula,
            category="elementwise",
            dtypes=FLOAT_DTYPES,
        )
    )

register(
    OpDef(
        name="atan2",
        inputs=("a", "b"),
        infer=broadcast_type,
        reference=_in_opmath(np.arctan2),
        doc="y = the angle of the point (b, a) in (-pi, pi], i.e. arctan(a / b) corrected by "
        "quadrant (atan2(+-0, -0) = +-pi, atan2(+-0, +0) = +-0; broadcasting; both inputs of "
        "one float dtype)",
        category="elementwise",
        dtypes=FLOAT_DTYPES,
    )
)
