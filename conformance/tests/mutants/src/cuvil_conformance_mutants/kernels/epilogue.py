"""A vendor-style fused epilogue: the producer (conv2d / linear / matmul) from the reference, then
bias, activation and residual as the kernel's own epilogue code. Plausible bugs: an erf
approximation inside gelu (Abramowitz-Stegun 7.1.25, |error| < 2.5e-5, small enough to hide in a
GEMM's accumulation allowance), and the residual order ignored. ``bug=None`` is correct."""

from __future__ import annotations

import numpy as np

from cuvil_conformance_mutants.kernels.elementwise import gelu_erf, gelu_tanh
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import get_op

F32 = np.float32
TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _erf_as(x: np.ndarray) -> np.ndarray:
    """Abramowitz-Stegun 7.1.25: erf(x) = 1 - (a1 t + a2 t^2 + a3 t^3) e^{-x^2}, t = 1/(1+px)."""
    ax = np.abs(x)
    t = F32(1) / (F32(1) + F32(0.47047) * ax)
    poly = t * (F32(0.3480242) + t * (F32(-0.0958798) + t * F32(0.7478556)))
    return np.sign(x) * (F32(1) - poly * np.exp(-ax * ax))


def _activate(y: np.ndarray, node: Node, bug: str | None) -> np.ndarray:
    a = node.attrs
    act = a["activation"]
    with np.errstate(all="ignore"):
        if act == "relu":
            return np.maximum(y, F32(0))
        if act == "relu6":
            return np.minimum(np.maximum(y, F32(0)), F32(6))
        if act == "clamp":
            lo, hi = a["activation_min"], a["activation_max"]
            y = y if lo is None else np.maximum(y, F32(lo))
            return y if hi is None else np.minimum(y, F32(hi))
        if act == "gelu":
            if bug == "approx_erf":
                return y * F32(0.5) * (F32(1) + _erf_as(y * F32(np.sqrt(0.5))))
            return np.where(np.isposinf(y), y, gelu_erf(y))
        if act == "gelu_tanh":
            return gelu_tanh(y)
        if act == "silu":
            return y / (F32(1) + np.exp(-y))
        if act == "hardswish":
            return y * np.minimum(np.maximum(y + F32(3), F32(0)), F32(6)) / F32(6)
    return y


def fused(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    a = node.attrs
    x, w, bias, *rest = args
    residual = rest[0] if a["has_residual"] else None
    if node.op == "fused_conv2d":
        nhwc = a["data_layout"] == "NHWC"
        conv = {k: a[k] for k in ("stride", "padding", "dilation", "groups")}
        z = get_op("conv2d").reference(x.transpose(TO_NCHW) if nhwc else x, w, bias, **conv)
        z = np.ascontiguousarray(z.transpose(TO_NHWC) if nhwc else z)
    elif node.op == "fused_linear":
        z = get_op("linear").reference(x, w, bias)
    else:
        z = get_op("add").reference(get_op("matmul").reference(x, w), bias)
    y = z.astype(F32)
    if residual is not None and (a["order"] == "residual_then_activation" or bug == "order"):
        y = _activate(y + residual.astype(F32), node, bug)
    elif residual is not None:
        y = _activate(y, node, bug) + residual.astype(F32)
    else:
        y = _activate(y, node, bug)
    return [y.astype(x.dtype)]
