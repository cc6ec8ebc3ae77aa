"""Scalar float32 functions that kernels inline: the op tables of the elementwise family.

Every unary function has the signature ``f(v, a, b) -> float32`` (``a``, ``b`` are the op's scalar
parameters: clamp bounds, or the scalar of a binary-with-scalar step) and every binary function
``f(x, y) -> float32``. They are plain Python so the same body runs in Numba's CUDA simulator and is
compiled for the device by ``cuda.jit(device=True)`` (so importing this module imports
``numba.cuda``; the package root never imports it). Explicit guards give IEEE results (NaN, inf)
where Python's ``math`` would raise in the simulator (log of a negative, exp overflow, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from numba import cuda, float32

_device = cuda.jit(device=True)

NAN = float("nan")
INF = float("inf")
_SQRT_HALF = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


@_device
def _exp(v: float) -> float:
    if v > 100.0:
        return float32(INF)
    return float32(math.exp(v))


@_device
def _log(v: float) -> float:
    if v < 0.0:
        return float32(NAN)
    if v == 0.0:
        return float32(-INF)
    return float32(math.log(v))


@_device
def _sqrt(v: float) -> float:
    if v < 0.0:
        return float32(NAN)
    return float32(math.sqrt(v))


@_device
def _sigmoid(v: float) -> float:
    return float32(1.0) / (float32(1.0) + _exp(-v))


@_device
def neg(v: float, a: float, b: float) -> float:
    return -v


@_device
def abs_(v: float, a: float, b: float) -> float:
    return abs(v)


@_device
def exp(v: float, a: float, b: float) -> float:
    return _exp(v)


@_device
def log(v: float, a: float, b: float) -> float:
    return _log(v)


@_device
def sqrt(v: float, a: float, b: float) -> float:
    return _sqrt(v)


@_device
def rsqrt(v: float, a: float, b: float) -> float:
    return float32(1.0) / _sqrt(v)


@_device
def relu(v: float, a: float, b: float) -> float:
    return float32(0.0) if v < 0.0 else v  # NaN < 0 is False: NaN propagates, as in torch


@_device
def clamp(v: float, a: float, b: float) -> float:
    if v < a:
        v = a
    if v > b:
        v = b
    return v


@_device
def relu6(v: float, a: float, b: float) -> float:
    return clamp(v, float32(0.0), float32(6.0))


@_device
def sigmoid(v: float, a: float, b: float) -> float:
    return _sigmoid(v)


@_device
def tanh(v: float, a: float, b: float) -> float:
    return float32(math.tanh(v))


@_device
def erf(v: float, a: float, b: float) -> float:
    return float32(math.erf(v))


@_device
def gelu(v: float, a: float, b: float) -> float:
    # float32 steps in the reference's order (x * 0.5 * (1 + erf)): the cancellation of 1 + erf
    # for negative x is part of the defined result, so it is reproduced, not avoided.
    e = float32(math.erf(v * float32(_SQRT_HALF)))
    return v * float32(0.5) * (float32(1.0) + e)


@_device
def gelu_tanh(v: float, a: float, b: float) -> float:
    inner = float32(_SQRT_2_OVER_PI) * (v + float32(0.044715) * v * v * v)
    return float32(0.5) * v * (float32(1.0) + float32(math.tanh(inner)))


@_device
def silu(v: float, a: float, b: float) -> float:
    return v / (float32(1.0) + _exp(-v))


@_device
def hardswish(v: float, a: float, b: float) -> float:
    return v * clamp(v + float32(3.0), float32(0.0), float32(6.0)) / float32(6.0)


@_device
def identity(v: float, a: float, b: float) -> float:
    return v


# --- binary ---------------------------------------------------------------------------------------


@_device
def add(x: float, y: float) -> float:
    return x + y


@_device
def sub(x: float, y: float) -> float:
    return x - y


@_device
def mul(x: float, y: float) -> float:
    return x * y


@_device
def div(x: float, y: float) -> float:
    return x / y


@_device
def _is_odd_integer(y: float) -> bool:
    return math.floor(y) == y and y - 2.0 * math.floor(y * 0.5) == 1.0


@_device
def pow_(x: float, y: float) -> float:
    """powf with IEEE special cases; overflow saturates to inf instead of raising."""
    if y == 0.0 or x == 1.0:
        return float32(1.0)
    if x != x or y != y:
        return float32(NAN)
    # a negative base with a non-integer exponent is NaN, except -inf (pow(-inf, y) = 0 / inf)
    if x < 0.0 and x != -INF and abs(y) != INF and math.floor(y) != y:
        return float32(NAN)
    if x == 0.0:
        if y < 0.0:
            return float32(INF)
        return float32(0.0)
    ax = abs(x)
    if ax != INF and abs(y) != INF:
        t = y * math.log2(ax)
        if t > 200.0:
            return float32(-INF) if x < 0.0 and _is_odd_integer(y) else float32(INF)
        if t < -200.0:
            return float32(0.0)
    return float32(math.pow(x, y))


@_device
def maximum(x: float, y: float) -> float:
    if x != x or y != y:
        return float32(NAN)
    return x if x >= y else y


@_device
def minimum(x: float, y: float) -> float:
    if x != x or y != y:
        return float32(NAN)
    return x if x <= y else y


UNARY: dict[str, Callable[[float, float, float], float]] = {
    "neg": neg,
    "abs": abs_,
    "exp": exp,
    "log": log,
    "sqrt": sqrt,
    "rsqrt": rsqrt,
    "relu": relu,
    "relu6": relu6,
    "clamp": clamp,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
    "hardswish": hardswish,
    "erf": erf,
    "identity": identity,
}

BINARY: dict[str, Callable[[float, float], float]] = {
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "pow": pow_,
    "max": maximum,
    "min": minimum,
}

#: Activations a GEMM/conv epilogue may fuse (all unary, parameters via ``act_params``).
ACTIVATIONS = ("identity", "relu", "relu6", "clamp", "gelu", "gelu_tanh", "silu", "hardswish")
