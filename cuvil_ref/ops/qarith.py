"""Integer-exact quantization arithmetic: the bit-for-bit contract every kernel pack reproduces.

It lives with the ops because the quantized ops' reference semantics are written with it; the
quantizer (``cuvil_ref.quant``) uses it to derive those ops' attributes.

Everything here follows ``docs/semantics.md`` (the pinned quant spec) to the bit:

* ``real = scale * (q - zero_point)``; activations int8 per-tensor asymmetric in [-128, 127],
  weights int8 per-output-channel symmetric in [-127, 127] with zero point 0, bias int32.
* A real ratio becomes a fixed-point ``(M, shift)`` with ``0 <= M < 2**31`` and ``1 <= shift <= 62``
  (:func:`quantize_multiplier`).
* ``rescale(acc) = (acc * M + (1 << (shift - 1))) >> shift`` in int64 with an arithmetic shift:
  one rounding, halves toward +inf (TOSA RESCALE with ``double_round=false``).
* Saturation is a clamp to ``[qmin, qmax]`` after adding the output zero point.

Host-side parameter math (ratios, multipliers, qparams) uses Python floats and ints; tensor math is
vectorized numpy int64 (or float32 for quantize/dequantize), never a Python loop per element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from cuvil_ref.errors import QuantizationError

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
WEIGHT_QMIN, WEIGHT_QMAX = -127, 127
MAX_SHIFT = 62
#: Smallest scale :func:`choose_qparams` returns (float32 machine epsilon, 2**-23).
MIN_SCALE = 2.0**-23
#: Largest |x - zp| * |w| term of qlinear/qconv2d (activation difference <= 255, |w| <= 128).
MAX_TERM_WEIGHT = 255 * 128
#: Largest |a - a_zp| * |b - b_zp| term of qmatmul (two int8 activations).
MAX_TERM_TWO_ACTIVATIONS = 255 * 255
# |a - a_zp| and |b - b_zp| bound for qadd, so that two terms plus rounding fit in int64.
_QADD_MAX_DIFF = 2**30


class QuantArithError(QuantizationError, ValueError):
    """A quantization parameter or operand outside the pinned spec (also a ``ValueError``)."""


# --- fixed-point multipliers (host side) ---------------------------------------------------------


def _check_ratio(ratio: float, what: str) -> float:
    r = float(ratio)
    if math.isnan(r) or math.isinf(r) or r < 0.0:
        raise QuantArithError(
            f"{what}: ratio must be a finite float >= 0, got {ratio!r}; check that every scale "
            "is a positive finite float32"
        )
    return r


def quantize_multiplier(ratio: float) -> tuple[int, int]:
    """Fixed-point ``(M, shift)`` with ``M / 2**shift ~= ratio``, ``0 <= M < 2**31``.

    ``ratio == 0 -> (0, 1)``. Otherwise ``m, e = frexp(ratio)``, ``M = round(m * 2**31)``
    (half-even, exact), renormalized if it reaches ``2**31``; ``shift = 31 - e``, capped at 62 by
    shifting ``M`` right (truncating). ``ratio >= 2**30`` (shift < 1) is rejected.
    """
    r = _check_ratio(ratio, "quantize_multiplier")
    if r == 0.0:
        return 0, 1
    m, e = math.frexp(r)
    mult = round(m * 2**31)
    if mult == 2**31:
        mult //= 2
        e += 1
    shift = 31 - e
    if shift > MAX_SHIFT:
        mult >>= shift - MAX_SHIFT
        shift = MAX_SHIFT
    if shift < 1:
        raise QuantArithError(
            f"quantize_multiplier: ratio {r!r} >= 2**30 is unsupported (shift would be {shift}); "
            "the output scale is far too small for its inputs, recalibrate the output range"
        )
    return mult, shift


def quantize_multipliers(ratios: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel :func:`quantize_multiplier`: two int64 arrays ``(M[c], shift[c])``."""
    pairs = [quantize_multiplier(r) for r in ratios]
    mults = np.array([p[0] for p in pairs], dtype=np.int64)
    shifts = np.array([p[1] for p in pairs], dtype=np.int64)
    return mults, shifts


def shared_shift_multipliers(ratios: Sequence[float]) -> tuple[tuple[int, ...], int]:
    """The qadd rule: one shift for all ratios, ``M_i = round(r_i * 2**shift)`` (half-even).

    ``e = max(frexp(r)[1] for nonzero r)``, ``shift = 30 - e``, clamped to 62 when larger; a shift
    below 1 (a ratio >= 2**29) is rejected. Every ``M_i <= 2**30``. All-zero ratios give
    ``((0, ...), 1)``.
    """
    rs = [_check_ratio(r, "shared_shift_multipliers") for r in ratios]
    if not rs:
        raise QuantArithError("shared_shift_multipliers: needs at least one ratio")
    nonzero = [r for r in rs if r != 0.0]
    if not nonzero:
        return tuple(0 for _ in rs), 1
    e = max(math.frexp(r)[1] for r in nonzero)
    shift = min(30 - e, MAX_SHIFT)
    if shift < 1:
        raise QuantArithError(
            f"shared_shift_multipliers: ratio {max(nonzero)!r} >= 2**29 needs shift {shift} < 1; "
            "the output scale is far too small for the inputs, recalibrate the output range"
        )
    # ldexp scales by a power of two, which is exact for these magnitudes.
    return tuple(round(math.ldexp(r, shift)) for r in rs), shift


# --- operand checks ------------------------------------------------------------------------------


def _int_array(x: object, op: str, name: str, lo: int, hi: int) -> np.ndarray:
    arr = np.asarray(x)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise QuantArithError(f"{op}: {name} must be an integer array, got dtype {arr.dtype}")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        hint = " (int32 accumulator overflow: see check_accumulator_bound)" if name == "acc" else ""
        raise QuantArithError(
            f"{op}: {name} has values in [{int(arr.min())}, {int(arr.max())}], outside "
            f"[{lo}, {hi}]{hint}"
        )
    return arr.astype(np.int64)


def _along(param: object, op: str, name: str, shape: tuple[int, ...], axis: int | None) -> object:
    """Reshape a per-channel parameter so it broadcasts along ``axis`` of an array of ``shape``."""
    p = np.asarray(param)
    if axis is None or p.ndim == 0:
        return p
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise QuantArithError(f"{op}: axis {axis} is out of range for an array of rank {ndim}")
    if p.ndim != 1 or p.shape[0] != shape[axis]:
        raise QuantArithError(
            f"{op}: per-channel {name} has shape {p.shape}, expected ({shape[axis]},) to match "
            f"axis {axis} of an array of shape {shape}"
        )
    target = [1] * ndim
    target[axis] = -1
    return p.reshape(target)


def _check_range(op: str, qmin: int, qmax: int) -> None:
    if not INT8_MIN <= qmin <= qmax <= INT8_MAX:
        raise QuantArithError(
            f"{op}: need -128 <= qmin <= qmax <= 127 for an int8 output, got [{qmin}, {qmax}]"
        )


def _check_zero_point(op: str, zp: object, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    z = np.asarray(zp)
    if not np.issubdtype(z.dtype, np.integer):
        raise QuantArithError(f"{op}: zero point must be an integer, got {zp!r}")
    if z.size and (int(z.min()) < lo or int(z.max()) > hi):
        raise QuantArithError(f"{op}: zero point {zp!r} outside [{lo}, {hi}]")
    return z.astype(np.int64)


def _check_scale(op: str, scale: object) -> np.ndarray:
    s = np.asarray(scale, dtype=np.float32)
    if s.size and not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise QuantArithError(f"{op}: scale must be a positive finite float32, got {scale!r}")
    return s


# --- integer tensor math -------------------------------------------------------------------------


def rescale(acc: object, multiplier: object, shift: object, axis: int | None = None) -> np.ndarray:
    """``(acc * M + (1 << (shift - 1))) >> shift`` in int64, arithmetic shift (halves up).

    ``acc`` must lie in int32; ``M`` in [0, 2**31) and ``shift`` in [1, 62] are scalars or, with
    ``axis``, 1-D per-channel arrays along that axis of ``acc``. ``|acc * M| <= 2**62`` and the
    rounding term is at most 2**61, so nothing overflows int64.
    """
    a = _int_array(acc, "rescale", "acc", INT32_MIN, INT32_MAX)
    m = _int_array(multiplier, "rescale", "multiplier", 0, INT32_MAX)
    s = _int_array(shift, "rescale", "shift", 1, MAX_SHIFT)
    m = _along(m, "rescale", "multiplier", a.shape, axis)
    s = _along(s, "rescale", "shift", a.shape, axis)
    rounding = np.left_shift(np.int64(1), s - 1)
    return np.right_shift(a * m + rounding, s).astype(np.int64)


def requantize_output(
    acc: object,
    multiplier: object,
    shift: object,
    out_zp: int,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
    axis: int | None = None,
) -> np.ndarray:
    """``clamp(out_zp + rescale(acc, M, shift), qmin, qmax)`` as int8 (int64 math first)."""
    _check_range("requantize_output", qmin, qmax)
    zp = int(_check_zero_point("requantize_output", out_zp))
    out = zp + rescale(acc, multiplier, shift, axis=axis)
    return np.clip(out, qmin, qmax).astype(np.int8)


def relu_bounds(kind: str | None, out_scale: float, out_zp: int) -> tuple[int, int]:
    """``(qmin, qmax)`` for a fused activation: ``None``, ``"relu"`` or ``"relu6"``.

    relu: ``qmin = max(-128, out_zp)``. relu6 also ``qmax = min(127, out_zp + round(6 / s))``
    where ``6 / s`` is a float64 host division of the float32 scale and round is half-even.
    """
    zp = int(_check_zero_point("relu_bounds", out_zp))
    s = float(_check_scale("relu_bounds", out_scale))
    if kind is None:
        return INT8_MIN, INT8_MAX
    if kind == "relu":
        return max(INT8_MIN, zp), INT8_MAX
    if kind == "relu6":
        return max(INT8_MIN, zp), min(INT8_MAX, zp + round(6.0 / s))
    raise QuantArithError(
        f"relu_bounds: unknown fused activation {kind!r}; use None, 'relu', 'relu6'"
    )


def qadd_int(
    a: object,
    a_zp: int,
    b: object,
    b_zp: int,
    multipliers: Sequence[int],
    shift: int,
    out_zp: int,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
) -> np.ndarray:
    """qadd with one rounding: ``acc = (a - a_zp) * M_a + (b - b_zp) * M_b`` (int64), then
    ``clamp(out_zp + ((acc + (1 << (shift - 1))) >> shift), qmin, qmax)``; a and b broadcast.

    ``multipliers, shift`` come from :func:`shared_shift_multipliers`.
    """
    if len(multipliers) != 2:
        raise QuantArithError(f"qadd_int: needs two multipliers (M_a, M_b), got {multipliers!r}")
    _check_range("qadd_int", qmin, qmax)
    zp = int(_check_zero_point("qadd_int", out_zp))
    m_a, m_b = (int(_int_array(m, "qadd_int", "multiplier", 0, INT32_MAX)) for m in multipliers)
    sh = int(_int_array(shift, "qadd_int", "shift", 1, MAX_SHIFT))
    lim = _QADD_MAX_DIFF
    da = _int_array(a, "qadd_int", "a", INT32_MIN, INT32_MAX) - int(
        _check_zero_point("qadd_int", a_zp)
    )
    db = _int_array(b, "qadd_int", "b", INT32_MIN, INT32_MAX) - int(
        _check_zero_point("qadd_int", b_zp)
    )
    for name, d in (("a - a_zp", da), ("b - b_zp", db)):
        if d.size and int(np.abs(d).max()) > lim:
            raise QuantArithError(f"qadd_int: {name} exceeds 2**30 in magnitude; inputs are int8")
    acc = da * m_a + db * m_b
    out = zp + np.right_shift(acc + (1 << (sh - 1)), sh)
    return np.clip(out, qmin, qmax).astype(np.int8)


def qmul_int(
    a: object,
    a_zp: int,
    b: object,
    b_zp: int,
    multiplier: int,
    shift: int,
    out_zp: int,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
) -> np.ndarray:
    """qmul: ``acc = (a - a_zp) * (b - b_zp)`` then :func:`requantize_output` with the
    ``(M, shift)`` of ``quantize_multiplier(s_a * s_b / s_out)``; a and b broadcast."""
    da = _int_array(a, "qmul_int", "a", INT32_MIN, INT32_MAX) - int(
        _check_zero_point("qmul_int", a_zp)
    )
    db = _int_array(b, "qmul_int", "b", INT32_MIN, INT32_MAX) - int(
        _check_zero_point("qmul_int", b_zp)
    )
    acc = da * db  # |da|, |db| <= 2**31 + 128: the product fits int64; rescale checks int32
    return requantize_output(acc, multiplier, shift, out_zp, qmin, qmax)


# --- float <-> int8 ------------------------------------------------------------------------------


def quantize(
    x: object,
    scale: object,
    zero_point: object,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
    axis: int | None = None,
) -> np.ndarray:
    """``clamp(rint(x / scale) + zp, qmin, qmax)`` as int8.

    ``x`` is first cast to float32; ``x / scale`` is one IEEE float32 division (never a reciprocal
    multiply); rint rounds half to even. NaN -> zp, +inf -> qmax, -inf -> qmin. With ``axis``,
    ``scale`` and ``zero_point`` are per-channel 1-D arrays along that axis.
    """
    _check_range("quantize", qmin, qmax)
    xf = np.asarray(x, dtype=np.float32)
    s = _along(_check_scale("quantize", scale), "quantize", "scale", xf.shape, axis)
    zp = _check_zero_point("quantize", zero_point, qmin, qmax)
    zp = _along(zp, "quantize", "zero_point", xf.shape, axis)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        t = np.rint(np.divide(xf, s, dtype=np.float32))
    lo = (qmin - zp).astype(np.float32)
    hi = (qmax - zp).astype(np.float32)
    clipped = np.clip(t, lo, hi)  # +-inf saturate here; NaN passes through
    clipped = np.where(np.isnan(clipped), np.float32(0.0), clipped)
    return (clipped.astype(np.int64) + zp).astype(np.int8)


def dequantize(q: object, scale: object, zero_point: object, axis: int | None = None) -> np.ndarray:
    """``float32(q - zp) * float32(scale)`` (one float32 multiply); per-channel with ``axis``."""
    qi = _int_array(q, "dequantize", "q", INT32_MIN, INT32_MAX)
    s = _along(_check_scale("dequantize", scale), "dequantize", "scale", qi.shape, axis)
    zp = _check_zero_point("dequantize", zero_point, INT32_MIN, INT32_MAX)
    zp = _along(zp, "dequantize", "zero_point", qi.shape, axis)
    diff = (qi - zp).astype(np.float32)
    return np.multiply(diff, s, dtype=np.float32)


# --- calibration parameters and compile-time checks ----------------------------------------------


def choose_qparams(
    min_val: float,
    max_val: float,
    symmetric: bool,
    qmin: int = INT8_MIN,
    qmax: int = INT8_MAX,
) -> tuple[np.float32, int]:
    """``(scale, zero_point)`` covering ``[min(min_val, 0), max(max_val, 0)]``.

    Asymmetric: ``scale = f32((hi - lo) / (qmax - qmin))``,
    ``zp = clamp(qmin - round(lo / scale), qmin, qmax)``.
    Symmetric: ``zp = 0``, ``scale = f32(max(-lo, hi) / min(-qmin, qmax))``.
    Host math is float64, round is half-even, and the scale is never below :data:`MIN_SCALE`
    (2**-23), so an all-zero or degenerate range gives scale 2**-23 and nothing divides by zero.
    """
    lo_f, hi_f = float(min_val), float(max_val)
    if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
        raise QuantArithError(
            f"choose_qparams: range [{min_val!r}, {max_val!r}] is not finite; calibration data "
            "contains NaN or inf, clean it or clip the activation"
        )
    if lo_f > hi_f:
        raise QuantArithError(f"choose_qparams: min_val {lo_f!r} > max_val {hi_f!r}")
    if not qmin < qmax:
        raise QuantArithError(f"choose_qparams: need qmin < qmax, got [{qmin}, {qmax}]")
    lo, hi = min(lo_f, 0.0), max(hi_f, 0.0)
    if symmetric:
        if not qmin < 0 < qmax:
            raise QuantArithError(f"choose_qparams: symmetric needs qmin < 0 < qmax, got {qmin}")
        raw = max(-lo, hi) / min(-qmin, qmax)
    else:
        raw = (hi - lo) / (qmax - qmin)
    scale = np.float32(max(raw, MIN_SCALE))
    if symmetric:
        return scale, 0
    zp = qmin - round(lo / float(scale))
    return scale, int(min(max(zp, qmin), qmax))


def check_accumulator_bound(
    k: int, max_abs_bias: int = 0, *, two_activations: bool = False
) -> None:
    """Raise unless ``k * term + |bias| < 2**31`` so int32 accumulation cannot overflow.

    ``term`` is 255 * 128 for qlinear/qconv2d (activation x weight) and 255 * 255 with
    ``two_activations=True`` (qmatmul). Called at compile time for every accumulating op.
    """
    if k < 0 or max_abs_bias < 0:
        raise QuantArithError(f"check_accumulator_bound: k={k}, bias={max_abs_bias} must be >= 0")
    term = MAX_TERM_TWO_ACTIVATIONS if two_activations else MAX_TERM_WEIGHT
    worst = k * term + max_abs_bias
    if worst >= 2**31:
        k_max = max((2**31 - 1 - max_abs_bias) // term, 0)
        raise QuantArithError(
            f"int32 accumulator may overflow: reduction length K={k} gives worst case {worst} "
            f"(K * {term} + |bias| {max_abs_bias}) >= 2**31; K <= {k_max} fits, so split the "
            "reduction or keep this op in float"
        )
