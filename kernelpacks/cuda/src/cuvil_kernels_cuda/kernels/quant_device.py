"""Device-side int8 arithmetic of the pinned quant spec (``cuvil_ref.ops.qarith`` on the host).

All integer math is int64 with arithmetic right shifts, so ``rescale`` rounds halves toward +inf
exactly as the spec; :func:`rint_even` is an explicit half-to-even rounding that gives the same
answer in the simulator (numpy scalars) and on the device (no reliance on ``round``/``rint``).
"""

from __future__ import annotations

import math

from numba import cuda, float32, int64


@cuda.jit(device=True)
def requant(acc, mult, shift, out_zp, qmin, qmax):  # noqa: ANN001, ANN201
    """``clamp(out_zp + ((acc * M + (1 << (shift - 1))) >> shift), qmin, qmax)`` in int64."""
    sh = int64(shift)
    v = int64(out_zp) + ((int64(acc) * int64(mult) + (int64(1) << (sh - int64(1)))) >> sh)
    if v < qmin:
        v = int64(qmin)
    if v > qmax:
        v = int64(qmax)
    return v


@cuda.jit(device=True)
def rint_even(t):  # noqa: ANN001, ANN201
    """Round a float32 to the nearest integer, halves to even; callers clamp |t| <= 1024 first."""
    f = int64(math.floor(t))
    d = t - float32(f)
    if d > float32(0.5) or (d == float32(0.5) and (f & int64(1)) == int64(1)):
        f += int64(1)
    return f


@cuda.jit(device=True)
def quantize_one(x, scale, zp, qmin, qmax):  # noqa: ANN001, ANN201
    """``clamp(rint(float32(x) / scale) + zp, qmin, qmax)``; NaN -> zp, +-inf saturate."""
    t = float32(x) / float32(scale)
    if t != t:
        return int64(zp)
    if t > float32(1024.0):
        t = float32(1024.0)
    if t < float32(-1024.0):
        t = float32(-1024.0)
    v = rint_even(t) + int64(zp)
    if v < qmin:
        v = int64(qmin)
    if v > qmax:
        v = int64(qmax)
    return v
