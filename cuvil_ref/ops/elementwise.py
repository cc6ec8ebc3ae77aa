"""Elementwise arithmetic: unary math, binary arithmetic with broadcasting, where, cast.

Trivial ops come from tables: each entry is (name, numpy function, formula, accepted dtypes).
Broadcasting and type promotion follow PyTorch (see ``cuvil_ref.ir.dtypes.promote``); NaN and
Inf propagate exactly as numpy's IEEE float functions do, which matches PyTorch on CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, STORAGE_DTYPES, DType, promote
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.grid import grid, point, torch_fn
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import broadcast_shapes

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})
SIGNED = frozenset(NUMERIC - {DType.u8})


def same_type(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    """Inference for unary ops: the output has the input's shape and dtype."""
    return (TensorType(types[0].shape, types[0].dtype, types[0].layout),)


def broadcast_type(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    """Inference for binary ops: broadcast shapes, promote dtypes."""
    dtype = types[0].dtype
    for t in types[1:]:
        dtype = promote(dtype, t.dtype)
    layout = types[0].layout if all(t.layout == types[0].layout for t in types) else None
    return (TensorType(broadcast_shapes(*(t.shape for t in types)), dtype, layout),)


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return reference


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = promote(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
        with np.errstate(all="ignore"):
            return np.asarray(fn(a.astype(dtype, copy=False), b.astype(dtype, copy=False))).astype(
                dtype, copy=False
            )

    return reference


def _erf(x: np.ndarray) -> np.ndarray:
    from cuvil_ref.ops.mathfn import erf

    return erf(x)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        raise ShapeError("integer 'div' is not defined; cast to f32 first (true division)")
    return a / b


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "iu":
        return np.power(a, b)
    return _int_pow(*np.broadcast_arrays(a, b))


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer a ** b by repeated squaring in a's dtype (wrapping on overflow, as torch); a
    negative exponent gives 1 for a = 1, +-1 for a = -1 (by parity) and 0 otherwise."""
    result = np.ones_like(a)
    base = a.copy()
    e = np.where(b > 0, b, 0).astype(np.int64)
    while np.any(e > 0):
        odd = (e & 1) == 1
        result = np.where(odd, result * base, result)
        base = base * base
        e >>= 1
    if a.dtype.kind == "i":
        negative = np.where((b % 2) == 0, 1, -1).astype(a.dtype)
        special = np.where(a == 1, 1, np.where(a == -1, negative, 0)).astype(a.dtype)
        result = np.where(b < 0, special, result)
    return result


UNARY: list[tuple[str, Callable[[np.ndarray], Any], str, frozenset[DType]]] = [
    ("neg", np.negative, "y = -x", SIGNED | FLOAT_DTYPES),
    ("abs", np.abs, "y = |x|", SIGNED | FLOAT_DTYPES),
    ("exp", np.exp, "y = e^x", FLOAT_DTYPES),
    ("log", np.log, "y = ln x (log 0 = -inf, log of a negative = NaN)", FLOAT_DTYPES),
    ("sqrt", np.sqrt, "y = sqrt(x) (NaN for x < 0)", FLOAT_DTYPES),
    ("rsqrt", _rsqrt, "y = 1 / sqrt(x) (rsqrt 0 = +inf)", FLOAT_DTYPES),
    ("erf", _erf, "y = 2/sqrt(pi) * integral_0^x e^(-t^2) dt", FLOAT_DTYPES),
]

BINARY: list[tuple[str, Callable[[np.ndarray, np.ndarray], Any], str, frozenset[DType]]] = [
    ("add", np.add, "y = a + b", NUMERIC),
    ("sub", np.subtract, "y = a - b", NUMERIC),
    ("mul", np.multiply, "y = a * b", NUMERIC),
    ("div", _div, "y = a / b (true division; x/0 = +-inf, 0/0 = NaN)", FLOAT_DTYPES),
    (
        "pow",
        _pow,
        "y = a ^ b (floats: IEEE pow, pow(x, 0) = 1 even for NaN; integers: exact, wrapping on "
        "overflow, and a negative exponent gives 1 for a = 1, +-1 for a = -1, else 0, as PyTorch)",
        NUMERIC,
    ),
    ("maximum", np.maximum, "y = max(a, b); NaN if either is NaN", NUMERIC),
    ("minimum", np.minimum, "y = min(a, b); NaN if either is NaN", NUMERIC),
]

_PROMOTION = (
    point("promotion", shapes=((3, 4), (3, 4)), dtypes=("f32", "f16")),
    point("promotion", shapes=((3, 4), (4,)), dtypes=("i32", "f32")),
)
#: Per-op knowledge of the table ops beyond their row: tolerance class (default ulp:4), the
#: conformance grid and edge values, the torch twin. Sign and selection ops are exact; the
#: IEEE-correctly-rounded ones are held to 1 ulp.
EXTRA: dict[str, dict[str, Any]] = {
    "neg": {"tolerance": "exact", "torch_twin": torch_fn("neg")},
    "abs": {"tolerance": "exact", "torch_twin": torch_fn("abs")},
    "exp": {"torch_twin": torch_fn("exp"), "conformance": grid(edges=(88.7, -103.9, 89.0))},
    "log": {"torch_twin": torch_fn("log"), "conformance": grid(domain="positive")},
    "sqrt": {
        "tolerance": "ulp:1",
        "torch_twin": torch_fn("sqrt"),
        "conformance": grid(domain="positive"),
    },
    "rsqrt": {"torch_twin": torch_fn("rsqrt"), "conformance": grid(domain="positive")},
    "erf": {"torch_twin": torch_fn("erf"), "conformance": grid(edges=(1e-30, 4.0, -6.0))},
    "add": {"tolerance": "ulp:1", "torch_twin": torch_fn("add"), "conformance": grid(*_PROMOTION)},
    "sub": {"tolerance": "ulp:1", "torch_twin": torch_fn("sub")},
    "mul": {"tolerance": "ulp:1", "torch_twin": torch_fn("mul"), "conformance": grid(*_PROMOTION)},
    "div": {"tolerance": "ulp:1", "torch_twin": torch_fn("div")},
    "pow": {"torch_twin": torch_fn("pow"), "conformance": grid(domain="positive")},
    "maximum": {
        "tolerance": "exact",
        "torch_twin": torch_fn("maximum"),
        "conformance": grid(*_PROMOTION),
    },
    "minimum": {"tolerance": "exact", "torch_twin": torch_fn("minimum")},
}

for _name, _fn, _formula, _dtypes in UNARY:
    register(
        OpDef(
            name=_name,
            inputs=("x",),
            infer=same_type,
            reference=_unary(_fn),
            doc=_formula,
            category="elementwise",
            dtypes=_dtypes,
            **EXTRA.get(_name, {}),
        )
    )

for _name, _fn, _formula, _dtypes in BINARY:
    register(
        OpDef(
            name=_name,
            inputs=("a", "b"),
            infer=broadcast_type,
            reference=_binary(_fn),
            doc=_formula + " (broadcasting, PyTorch type promotion)",
            category="elementwise",
            dtypes=_dtypes,
            **EXTRA.get(_name, {}),
        )
    )


def _where_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    cond, a, b = types
    if cond.dtype != DType.bool:
        raise ShapeError(f"condition must be bool, got {cond.dtype.value}")
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    return (TensorType(shape, promote(a.dtype, b.dtype)),)


def _where(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dtype = promote(DType.from_numpy(a.dtype), DType.from_numpy(b.dtype)).numpy
    return np.where(cond, a.astype(dtype, copy=False), b.astype(dtype, copy=False))


register(
    OpDef(
        name="where",
        inputs=("condition", "a", "b"),
        infer=_where_infer,
        reference=_where,
        doc="y = a where condition else b (broadcasting all three)",
        category="elementwise",
        family="select",
        tolerance="exact",
        torch_twin=torch_fn("where"),
        conformance=grid(
            point(shapes=((3, 4), (3, 4), (3, 4)), dtypes=("bool", "f32", "f32")),
            point("broadcast", shapes=((3, 1), (1, 4), ()), dtypes=("bool", "f32", "f32")),
            point("int", shapes=((2, 3), (2, 3), (2, 3)), dtypes=("bool", "i32", "i32")),
            point(
                "edge",
                shapes=((4, 5), (4, 5), (4, 5)),
                dtypes=("bool", "f32", "f32"),
                values=("bool", "nan_one:3", "edge"),
            ),
        ),
    )
)


def _cast_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    return (TensorType(types[0].shape, DType(attrs["dtype"]), types[0].layout),)


def _cast(x: np.ndarray, *, dtype: str) -> np.ndarray:
    """Float -> int truncates toward zero (as torch); NaN/Inf -> int is undefined in torch, here
    NaN -> 0 and +-Inf saturate; float -> bool is x != 0. To and from a storage type (float8,
    float4, int4/int2) it is ml_dtypes' conversion: round to nearest even, out-of-range floats
    become inf or NaN where the format has them (saturate first for ONNX's saturate=1), integers
    wrap to the narrow width."""
    target = DType(dtype).numpy
    is_float = np.issubdtype(x.dtype, np.floating) or DType.from_numpy(x.dtype).is_float
    if is_float and np.issubdtype(target, np.integer):
        info = np.iinfo(target)
        xf = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
        return np.clip(np.trunc(xf), info.min, info.max).astype(target)
    if target == np.bool_:
        return x != 0
    with np.errstate(all="ignore"):
        return x.astype(target)


register(
    OpDef(
        name="cast",
        inputs=("x",),
        attrs=(Attr("dtype", "dtype", doc="target dtype"),),
        infer=_cast_infer,
        reference=_cast,
        doc="y = x converted to `dtype` (float->int truncates toward zero, saturating; NaN -> 0; "
        "to a storage type such as f8e4m3fn or i4: round to nearest even, integers wrap)",
        category="elementwise",
        tolerance="exact",
        conformance=grid(
            *(point("to_float", dtype=d) for d in ("f32", "f16")),
            *(point("to_int", dtype=d) for d in ("i32", "i8")),
            point("to_bool", dtype="bool"),
            # float -> int: truncation toward zero at +-k.5 and saturation far outside the range
            point("saturation", dtype="i8", shapes=((6, 8),), dtypes="f32", values="large:300"),
            point("saturation", dtype="u8", shapes=((6, 8),), dtypes="f32", values="large:300"),
            point("saturation", dtype="i32", shapes=((6, 8),), dtypes="f32", values="large:3e9"),
            edges=(127.5, -128.5, 255.5, -0.5, 0.5, 2.5, -2.5, 1e10, -1e10),
        ),
        dtypes=ALL_DTYPES | STORAGE_DTYPES,
    )
)
