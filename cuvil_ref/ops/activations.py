"""Activation functions: pointwise nonlinearities with PyTorch's exact formulas.

Every op keeps its input's shape and dtype. f16/bf16 inputs are computed in f32 and rounded once,
as PyTorch's CPU kernels do. NaN propagates (``relu(NaN) = NaN``, ``clamp(NaN) = NaN``) and
infinities follow the formula as written, so e.g. ``silu(-inf) = -inf / inf = NaN`` as in PyTorch.
The clamp family also accepts integer tensors; everything else is float only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import FLOAT_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.elementwise import NUMERIC, same_type
from cuvil_ref.ops.grid import grid, point, torch_fn
from cuvil_ref.ops.mathfn import erf
from cuvil_ref.ops.registry import Attr, OpDef, register

_HALF = (np.dtype(np.float16), DType.bf16.numpy)


def opmath(x: np.ndarray) -> np.ndarray:
    """``x`` in the precision PyTorch computes it in: f16/bf16 widen to f32, others unchanged."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def _pointwise(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A reference that evaluates ``fn(x, **attrs)`` in opmath and rounds to x's dtype."""

    def reference(x: np.ndarray, **attrs: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            y = fn(opmath(x), **attrs)
        return np.asarray(y).astype(x.dtype, copy=False)

    reference.__doc__ = fn.__doc__
    return reference


def _clamp(x: np.ndarray, lo: float | None, hi: float | None) -> np.ndarray:
    """``min(max(x, lo), hi)``; NaN stays NaN and ``lo > hi`` gives ``hi`` everywhere."""
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        # A bound outside the dtype's range is a no-op (or saturates everything): clip it first.
        lo = None if lo is None else int(min(max(lo, info.min), info.max))
        hi = None if hi is None else int(min(max(hi, info.min), info.max))
    y = x if lo is None else np.maximum(x, lo)
    return y if hi is None else np.minimum(y, hi)


def _gelu(x: np.ndarray, *, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + np.tanh(inner))
    return x * 0.5 * (1.0 + erf(x * math.sqrt(0.5)))


def _softplus(x: np.ndarray, *, beta: float, threshold: float) -> np.ndarray:
    z = x * beta
    return np.where(z > threshold, x, np.log1p(np.exp(z)) / beta)


def _hardsigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.log1p(np.exp(x)))


# (name, function of (x, **attrs) in opmath, formula, attrs)
FLOAT_ACTIVATIONS: list[tuple[str, Callable[..., np.ndarray], str, tuple[Attr, ...]]] = [
    ("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), "y = 1 / (1 + e^-x)", ()),
    ("tanh", np.tanh, "y = tanh(x)", ()),
    (
        "gelu",
        _gelu,
        "approximate='none': y = x/2 * (1 + erf(x / sqrt(2))); approximate='tanh': "
        "y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). gelu(+inf) = +inf (PyTorch's "
        "vectorized f32 'none' kernel gives NaN there but its scalar path gives inf; we choose "
        "inf); gelu(-inf) = NaN in both modes, as in PyTorch",
        (Attr("approximate", "str", "none", "'none' (erf) or 'tanh'", ("none", "tanh")),),
    ),
    ("silu", lambda x: x / (1.0 + np.exp(-x)), "y = x / (1 + e^-x)  (silu(-inf) = NaN)", ()),
    (
        "hardswish",
        lambda x: x * _hardsigmoid(x),
        "y = x * min(max(x + 3, 0), 6) / 6  (hardswish(-inf) = NaN)",
        (),
    ),
    ("hardsigmoid", _hardsigmoid, "y = min(max(x + 3, 0), 6) / 6", ()),
    (
        "softplus",
        _softplus,
        "y = x if beta*x > threshold else log(1 + e^(beta*x)) / beta",
        (
            Attr("beta", "float", 1.0, "scale of the input inside the log"),
            Attr("threshold", "float", 20.0, "above beta*x > threshold the op is the identity"),
        ),
    ),
    (
        "elu",
        lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x)),
        "y = x if x > 0 else alpha * (e^x - 1)",
        (Attr("alpha", "float", 1.0, "saturation value for negative inputs"),),
    ),
    (
        "leaky_relu",
        lambda x, negative_slope: np.where(x > 0, x, x * negative_slope),
        "y = x if x > 0 else negative_slope * x",
        (Attr("negative_slope", "float", 0.01, "slope for x <= 0"),),
    ),
    ("mish", _mish, "y = x * tanh(log(1 + e^x))  (mish(-inf) = NaN)", ()),
    ("softsign", lambda x: x / (1.0 + np.abs(x)), "y = x / (1 + |x|)  (softsign(+-inf) = NaN)", ()),
]

_F = "nn.functional."


def _clamp_twin(torch: Any, x: Any, *, min: float | None, max: float | None) -> Any:
    """torch.clamp; an int tensor gets int bounds (Cuvil keeps its dtype, where torch would
    promote to float for float bounds; the frontend inserts the cast)."""
    if not x.dtype.is_floating_point:
        min, max = (None if b is None else int(b) for b in (min, max))
    return torch.clamp(x, min, max)
#: Per-op knowledge beyond the table rows: conformance grids (attribute values worth testing,
#: each tagged with its rule), extra edge values, tolerance class where not ulp:4, torch twins.
EXTRA: dict[str, dict[str, Any]] = {
    "sigmoid": {"torch_twin": torch_fn("sigmoid"), "conformance": grid(edges=(-88.8, 30.0))},
    "tanh": {"torch_twin": torch_fn("tanh"), "conformance": grid(edges=(1e-4, -9.1, 20.0))},
    "gelu": {
        "torch_twin": torch_fn(_F + "gelu"),
        # erf and tanh forms differ by ~1e-4 near |x| = 2: each must be computed as named
        "conformance": grid(
            point("approximate", approximate="none"),
            point("approximate", approximate="tanh"),
            edges=(-2.0, 2.0, -5.5, 10.0),
        ),
    },
    "silu": {"torch_twin": torch_fn(_F + "silu"), "conformance": grid(edges=(-90.0, 90.0))},
    "hardswish": {"torch_twin": torch_fn(_F + "hardswish")},
    "hardsigmoid": {"torch_twin": torch_fn(_F + "hardsigmoid")},
    "softplus": {
        "torch_twin": torch_fn(_F + "softplus"),
        # the threshold compares beta * x, not x: beta 2, x between threshold/2 and threshold
        "conformance": grid(
            point(),
            point("threshold", beta=2.0, threshold=5.0),
            edges=(2.75, 3.5, 4.9, 21.0, -21.0),
        ),
    },
    "elu": {
        "torch_twin": torch_fn(_F + "elu"),
        # expm1, not exp - 1: small negative inputs
        "conformance": grid(point(), point("alpha", alpha=0.5), edges=(-1e-3, -1e-5, -3e-7)),
    },
    "leaky_relu": {
        "tolerance": "ulp:1",
        "torch_twin": torch_fn(_F + "leaky_relu"),
        # a slope above 1 separates the formula from max(x, slope * x)
        "conformance": grid(
            point(),
            point("slope", negative_slope=0.2),
            point("slope_above_one", negative_slope=1.5),
        ),
    },
    "mish": {"torch_twin": torch_fn(_F + "mish")},
    # near +-1 for large |x|: the division must not be a reciprocal estimate
    "softsign": {"torch_twin": torch_fn(_F + "softsign"), "conformance": grid(edges=(1e-30, 3e38))},
    "relu": {"tolerance": "exact", "torch_twin": torch_fn("relu")},
    "relu6": {"tolerance": "exact", "torch_twin": torch_fn(_F + "relu6")},
    "clamp": {
        "tolerance": "exact",
        "torch_twin": _clamp_twin,
        "conformance": grid(
            point("bounds", min=-1.0, max=2.0),
            point("one_bound", min=0.0, max=None),
            point("one_bound", min=None, max=1.0),
            point("inverted_bounds", min=1.0, max=-1.0),
        ),
    },
    "hardtanh": {
        "tolerance": "exact",
        "torch_twin": torch_fn(_F + "hardtanh"),
        "conformance": grid(point(), point("bounds", min_val=-2.0, max_val=3.0)),
    },
}

for _name, _fn, _formula, _attrs in FLOAT_ACTIVATIONS:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=same_type,
            reference=_pointwise(_fn),
            doc=_formula,
            attrs=_attrs,
            category="activation",
            dtypes=FLOAT_DTYPES,
            **EXTRA.get(_name, {}),
        )
    )


def _clamp_infer(lo_key: str, hi_key: str) -> Callable[..., tuple[TensorType, ...]]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        if types[0].dtype.is_int:
            for key in (lo_key, hi_key):
                bound = attrs.get(key)
                if bound is not None and not float(bound).is_integer():
                    raise ShapeError(
                        f"bound {key}={bound} is not a whole number but the input is "
                        f"{types[0].dtype.value}; cast the input to f32 first (PyTorch promotes)"
                    )
        return same_type(types, attrs)

    return infer


# (name, function, formula, attrs, (lower, upper) bound attr names): all are clamps.
CLAMP_FAMILY: list[tuple[str, Callable[..., Any], str, tuple[Attr, ...], tuple[str, str]]] = [
    ("relu", lambda x: _clamp(x, 0, None), "y = max(x, 0)", (), ("", "")),
    ("relu6", lambda x: _clamp(x, 0, 6), "y = min(max(x, 0), 6)", (), ("", "")),
    (
        "clamp",
        lambda x, min, max: _clamp(x, min, max),
        "y = min(max(x, min), max); a None bound is not applied (both None is the identity; "
        "PyTorch rejects that); min > max gives max everywhere. "
        "Integer inputs keep their dtype and need whole-number bounds (PyTorch would promote an "
        "int tensor clamped by a float to f32: insert a cast)",
        (
            Attr("min", "float?", None, "lower bound, or None"),
            Attr("max", "float?", None, "upper bound, or None"),
        ),
        ("min", "max"),
    ),
    (
        "hardtanh",
        lambda x, min_val, max_val: _clamp(x, min_val, max_val),
        "y = min(max(x, min_val), max_val)",
        (
            Attr("min_val", "float", -1.0, "lower bound"),
            Attr("max_val", "float", 1.0, "upper bound"),
        ),
        ("min_val", "max_val"),
    ),
]

for _name, _fn, _formula, _attrs, (_lo, _hi) in CLAMP_FAMILY:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=_clamp_infer(_lo, _hi),
            reference=_pointwise(_fn),
            doc=_formula + " (NaN stays NaN)",
            attrs=_attrs,
            category="activation",
            dtypes=NUMERIC,
            **EXTRA.get(_name, {}),
        )
    )
