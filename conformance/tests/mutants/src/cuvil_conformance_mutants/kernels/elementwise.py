"""Vendor-style elementwise kernels, each with its plausible bugs behind a switch.

Written from the op docs, not from the reference: f16/bf16 inputs are computed in f32 and rounded
once, results take the node's output dtype. ``bug=None`` is the correct kernel.
"""

from __future__ import annotations

import math

import numpy as np

from cuvil_ref.ir.graph import Node
from cuvil_ref.ops.mathfn import erf

F32 = np.float32


def _out(node: Node) -> np.dtype:
    return node.outputs[0].type.dtype.numpy


def _wide(x: np.ndarray) -> np.ndarray:
    """f16/bf16 computed in f32; other dtypes as they are."""
    half = x.dtype == np.float16 or x.dtype.name == "bfloat16"
    return x.astype(F32) if half else x


def maximum(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    """``fmax``/``fmin`` (IEEE maxNum: the number wins over NaN) is the planted bug."""
    dt = _out(node)
    a, b = (x.astype(dt) for x in args)
    if node.op == "maximum":
        y = np.fmax(a, b) if bug == "fmax" else np.maximum(a, b)
    else:
        y = np.fmin(a, b) if bug == "fmin" else np.minimum(a, b)
    return [y.astype(dt)]


def relu(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    # "select": x > 0 ? x : 0 -- a NaN compares false and becomes 0
    y = np.where(x > 0, x, np.zeros_like(x)) if bug == "select" else np.maximum(x, x.dtype.type(0))
    return [y.astype(x.dtype)]


def clamp(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    lo, hi = node.attrs["min"], node.attrs["max"]
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        lo = None if lo is None else int(min(max(lo, info.min), info.max))
        hi = None if hi is None else int(min(max(hi, info.min), info.max))
    mx, mn = (np.fmax, np.fmin) if bug == "fminmax" else (np.maximum, np.minimum)
    y = x if lo is None else mx(x, x.dtype.type(lo))
    y = y if hi is None else mn(y, x.dtype.type(hi))
    return [np.asarray(y).astype(x.dtype)]


def leaky_relu(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x = _wide(args[0])
    s = F32(node.attrs["negative_slope"])
    # "max": max(x, slope * x) equals the formula only for slopes below 1
    y = np.maximum(x, x * s) if bug == "max" else np.where(x > 0, x, x * s)
    return [y.astype(args[0].dtype)]


def elu(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x = _wide(args[0])
    alpha = F32(node.attrs["alpha"])
    with np.errstate(all="ignore"):
        em1 = np.exp(x) - F32(1) if bug == "exp_minus_one" else np.expm1(x)
        y = np.where(x > 0, x, alpha * em1)
    return [y.astype(args[0].dtype)]


def softplus(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x = _wide(args[0])
    beta, thr = F32(node.attrs["beta"]), F32(node.attrs["threshold"])
    with np.errstate(all="ignore"):
        z = x * beta
        linear = (x if bug == "threshold_x" else z) > thr
        y = np.where(linear, x, np.log1p(np.exp(z)) / beta)
    return [y.astype(args[0].dtype)]


def gelu_erf(x: np.ndarray) -> np.ndarray:
    return x * F32(0.5) * (F32(1) + erf(x * F32(math.sqrt(0.5))))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    inner = F32(math.sqrt(2.0 / math.pi)) * (x + F32(0.044715) * x * x * x)
    return F32(0.5) * x * (F32(1) + np.tanh(inner))


def gelu(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x = _wide(args[0])
    with np.errstate(all="ignore"):
        if bug == "tanh_always" or node.attrs["approximate"] == "tanh":
            y = gelu_tanh(x)
        else:
            y = np.where(np.isposinf(x), x, gelu_erf(x))
    return [y.astype(args[0].dtype)]


def div(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    dt = _out(node)
    a, b = (_wide(v.astype(dt)) for v in args)
    with np.errstate(all="ignore"):
        # "reciprocal": a * (1 / b), two roundings (a fast-math rewrite)
        y = a * (F32(1) / b) if bug == "reciprocal" else a / b
    return [y.astype(dt)]


def cast(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    target = np.dtype(_out(node))
    is_float = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    with np.errstate(all="ignore"):
        if is_float and target.kind in "iu":
            info = np.iinfo(target)
            xf = x.astype(np.float64)
            if bug == "nan_int_min":  # x86 cvttss2si: NaN and out of range give INT_MIN
                bad = ~np.isfinite(xf) | (np.abs(xf) >= 2.0**31)
                y32 = np.where(bad, -(2**31), np.trunc(np.where(bad, 0, xf))).astype(np.int64)
                return [np.clip(y32, info.min, info.max).astype(target)]
            t = np.rint(xf) if bug == "round" else np.trunc(xf)
            t = np.nan_to_num(t, nan=0.0, posinf=info.max, neginf=info.min)
            if bug == "wrap":  # convert through int64 and narrow: wraps instead of saturating
                return [np.clip(t, -(2.0**62), 2.0**62).astype(np.int64).astype(target)]
            return [np.clip(t, info.min, info.max).astype(target)]
        if target == np.bool_:
            return [x != 0]
        return [x.astype(target)]
