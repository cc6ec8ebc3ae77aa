"""Integer-only transformer ops: qsoftmax, qlayer_norm and qlut (GELU and other activations).

Every op here is int8 in, int8 out, with only integer arithmetic at run time (I-BERT style:
Kim et al., "I-BERT: Integer-only BERT Quantization", ICML 2021, with lookup tables where an
int8 input makes a table exact). Tables and constants are computed once on the host by the
quantizer (``*_table`` / ``layer_norm_params`` below) and stored as attributes, so every pack
reads the same integers and agrees bit for bit. ``docs/semantics.md`` §11 is the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import QuantParams, TensorType
from cuvil_ref.ops import qarith
from cuvil_ref.ops import quant_common as qc
from cuvil_ref.ops.grid import GridPoint, grid, point
from cuvil_ref.ops.registry import REQUIRED, Attr, get_op
from cuvil_ref.ops.shapes import normalize_axis

#: qsoftmax: exp table entries are Q15 (``table[255] = 2**15 = exp(0)``).
EXP_BITS = 15
#: qsoftmax: reciprocal of the row sum in Q44, products shifted by 36 to give 256 * e / sum.
RECIP_BITS, PROB_SHIFT = 44, 36
#: qsoftmax output: probability p is stored as q = -128 + 256 p (scale 2**-8, zero point -128).
SOFTMAX_SCALE, SOFTMAX_ZP = 2.0**-8, -128
#: qlayer_norm: reciprocal of the root in Q50; the normalized value z is carried in Q20.
INV_BITS, Z_BITS = 50, 20
#: qlayer_norm: largest normalized length (keeps c * inv below 2**62).
LN_MAX_N = 1 << 16


# --- host-side tables (called by the quantizer; packs only read the results) --------------------


def exp_table(x_scale: float) -> tuple[int, ...]:
    """``table[i] = round(2**15 * exp(s_x * (i - 255)))`` (float64, half to even), i < 256:
    the Q15 exponential of every possible ``x - max(x)`` of an int8 row."""
    d = np.arange(256, dtype=np.float64) - 255.0
    return tuple(int(v) for v in np.rint(np.exp(float(x_scale) * d) * 2**EXP_BITS))


def lut_table(
    fn: Callable[[np.ndarray], np.ndarray], x_scale: float, x_zp: int, out_scale: float, out_zp: int
) -> tuple[int, ...]:
    """``table[i] = quantize(fn(dequantize(i - 128)))`` for i < 256 (§5 rules, float32): the
    int8 image of a float function ``fn`` (e.g. the registry's float ``gelu``) on every input."""
    q = np.arange(-128, 128, dtype=np.int64)
    x = qarith.dequantize(q, np.float32(x_scale), x_zp)
    y = np.asarray(fn(x), np.float32)
    return tuple(int(v) for v in qarith.quantize(y, np.float32(out_scale), out_zp))


def layer_norm_params(
    gamma: np.ndarray, beta: np.ndarray, eps: float, x_scale: float, out_scale: float, n: int
) -> dict[str, Any]:
    """The qlayer_norm attributes for affine ``gamma``, ``beta``: per channel
    ``M, shift = quantize_multiplier(|gamma| / (s_out * 2**20))``, ``sign = sign(gamma)``,
    ``beta_q = round(beta / s_out)`` (half to even, clamped to +-2**20), and
    ``eps_q = min(round(n**2 * eps / s_x**2), 2**61 - 1)`` (the variance floor in the integer
    domain; the cap only bites at scales where eps alone saturates every output)."""
    g = np.asarray(gamma, np.float64).reshape(-1)
    b = np.asarray(beta, np.float64).reshape(-1)
    so = float(np.float32(out_scale))
    mult, shift = qarith.quantize_multipliers([abs(float(v)) / (so * 2**Z_BITS) for v in g])
    sx = float(np.float32(x_scale))
    return {
        "multiplier": tuple(int(m) for m in mult),
        "shift": tuple(int(s) for s in shift),
        "sign": tuple(int(np.sign(v)) for v in g),
        "beta_q": tuple(int(v) for v in np.clip(np.rint(b / so), -(2**20), 2**20)),
        "eps_q": min(int(round(n * n * float(eps) / (sx * sx))), 2**61 - 1),
    }


def isqrt(v: np.ndarray) -> np.ndarray:
    """Exact floor square root of int64 values in [0, 2**62] (float estimate, integer fix-up;
    qlayer_norm's operand stays in that range)."""
    v = np.asarray(v, np.int64)
    r = np.floor(np.sqrt(v.astype(np.float64))).astype(np.int64)
    r = np.where(r * r > v, r - 1, r)
    return np.where((r + 1) * (r + 1) <= v, r + 1, r)


# --- qsoftmax ------------------------------------------------------------------------------------


def _qsoftmax_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (x,) = types
    qc.want_dtype("qsoftmax", x, DType.i8, "x")
    normalize_axis(attrs["axis"], x.rank)
    table = attrs["table"]
    if len(table) != 256 or any(not 0 <= v <= 2**EXP_BITS for v in table):
        raise qc.fail("qsoftmax", "table needs 256 entries in [0, 2**15] (see exp_table)")
    if table[255] != 2**EXP_BITS:
        raise qc.fail("qsoftmax", f"table[255] must be 2**15 = exp(0), got {table[255]}")
    quant = QuantParams.per_tensor(SOFTMAX_SCALE, SOFTMAX_ZP)
    return (TensorType(x.shape, DType.i8, x.layout, quant),)


def _qsoftmax(x: np.ndarray, **attrs: Any) -> np.ndarray:
    axis = attrs["axis"]
    table = np.asarray(attrs["table"], np.int64)
    d = x.astype(np.int64) - x.max(axis=axis, keepdims=True).astype(np.int64)
    e = table[d + 255]
    recip = (np.int64(1) << RECIP_BITS) // e.sum(axis=axis, keepdims=True)
    q = ((e * recip + (np.int64(1) << (PROB_SHIFT - 1))) >> PROB_SHIFT) + SOFTMAX_ZP
    return np.clip(q, -128, 127).astype(np.int8)


qc.register_qop(
    "qsoftmax",
    ("x",),
    _qsoftmax_infer,
    _qsoftmax,
    "Integer softmax along `axis`: d = x - max(x) in [-255, 0]; e = table[d + 255] (Q15 exp, "
    "exp_table(s_x)); recip = floor(2**44 / sum(e)); out = clamp(((e * recip + 2**35) >> 36) "
    "- 128, -128, 127): probabilities at scale 2**-8, zero point -128.",
    (
        Attr("axis", "int", -1, "softmax axis"),
        Attr("table", "ints", REQUIRED, "256 Q15 exp values, table[255] = 2**15"),
    ),
    conformance=grid(
        point(table=exp_table(0.05), shapes=((4, 16),), dtypes="i8", values="full"),
        # rows of 128: sums near 2**22 stress the Q44 reciprocal
        point("long_row", table=exp_table(0.1), shapes=((2, 3, 128),), dtypes="i8", values="full"),
        # int8 limits and rows of equal values (a uniform distribution)
        point("edge", table=exp_table(0.5), shapes=((3, 7),), dtypes="i8", values="edge"),
        point(
            "axis", axis=1, table=exp_table(0.02), shapes=((2, 5, 3),), dtypes="i8", values="full"
        ),
    ),
)


# --- qlut ----------------------------------------------------------------------------------------


def _lut_point(rule: str, fn: str, sx: float, zx: int, so: float, zo: int) -> GridPoint:
    """A qlut grid point sampling the registry's float ``fn`` (registered before this module)."""
    opdef = get_op(fn)
    attrs = opdef.normalize_attrs({})
    table = lut_table(lambda v: opdef.evaluate([v], attrs)[0], sx, zx, so, zo)
    full = {"table": table, "fn": fn, "out_scale": so, "out_zp": zo}
    return point(rule, attrs=full, shapes=((3, 300),), dtypes="i8", values="full")


def _qlut_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (x,) = types
    qc.want_dtype("qlut", x, DType.i8, "x")
    qc.check_out("qlut", attrs)
    table = attrs["table"]
    if len(table) != 256 or any(not -128 <= v <= 127 for v in table):
        raise qc.fail("qlut", "table needs 256 int8 entries (see lut_table)")
    return (qc.qtype(x.shape, attrs, x.layout),)


def _qlut(x: np.ndarray, **attrs: Any) -> np.ndarray:
    table = np.asarray(attrs["table"], np.int64)
    out = table[x.astype(np.int64) + 128]
    return np.clip(out, attrs["qmin"], attrs["qmax"]).astype(np.int8)


qc.register_qop(
    "qlut",
    ("x",),
    _qlut_infer,
    _qlut,
    "out = clamp(table[x + 128], qmin, qmax): an int8 -> int8 lookup table, exact for any "
    "unary function of an int8 input (GELU, sigmoid, tanh, SiLU...; lut_table builds it as "
    "quantize(f(dequantize(x))) with the §5 rules). `fn` names the function, for reports.",
    (
        Attr("table", "ints", REQUIRED, "256 int8 outputs, one per input -128..127"),
        Attr("fn", "str", "", "the float function the table samples (informational)"),
        *qc.OUT_ATTRS,
    ),
    conformance=grid(
        _lut_point("basic", "gelu", 0.05, 3, 0.03, -20),
        # sigmoid at scale 1/256, zero point -128: outputs near 1.0 saturate at 127
        _lut_point("saturation", "sigmoid", 0.1, 0, 1 / 256, -128),
        _lut_point("zero_points", "tanh", 0.02, -5, 0.008, 0),
    ),
)


# --- qlayer_norm ---------------------------------------------------------------------------------


def _ln_point(
    rule: str,
    shape: tuple[int, ...],
    sx: float,
    zx: int,
    so: float,
    zo: int,
    values: str = "full",
    **extra: int,
) -> GridPoint:
    """A qlayer_norm grid point with seeded gammas (some negative) and betas."""
    rng = np.random.default_rng(14 + shape[-1])
    gamma = rng.standard_normal(shape[-1]).astype(np.float32)
    beta = (0.3 * rng.standard_normal(shape[-1])).astype(np.float32)
    params = layer_norm_params(gamma, beta, 1e-5, sx, so, shape[-1])
    attrs = {"x_zp": zx, **params, "out_scale": so, "out_zp": zo, **extra}
    return point(rule, attrs=attrs, shapes=(shape,), dtypes="i8", values=values)


def _qlayer_norm_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (x,) = types
    op = "qlayer_norm"
    qc.want_dtype(op, x, DType.i8, "x")
    qc.check_out(op, attrs)
    qc.check_zp(op, "x_zp", attrs["x_zp"])
    if x.rank == 0:
        raise qc.fail(op, "needs at least one dim (normalized over the last)")
    n = qc.static(op, x.shape[-1], "the normalized dim")
    if not 1 <= n <= LN_MAX_N:
        raise qc.fail(op, f"normalized length {n} must be in [1, {LN_MAX_N}]")
    for name in ("multiplier", "shift", "sign", "beta_q"):
        if len(attrs[name]) != n:
            raise qc.fail(op, f"{name} needs {n} entries (one per channel), got {len(attrs[name])}")
    qc.check_rescale(op, attrs, (n,))
    if any(s not in (-1, 0, 1) for s in attrs["sign"]):
        raise qc.fail(op, "sign entries must be -1, 0 or 1")
    if any(abs(b) > 2**20 for b in attrs["beta_q"]) or not 0 <= attrs["eps_q"] < 2**61:
        raise qc.fail(op, "beta_q must be within +-2**20 and eps_q in [0, 2**61)")
    return (qc.qtype(x.shape, attrs, x.layout),)


def _qlayer_norm(x: np.ndarray, **attrs: Any) -> np.ndarray:
    n = x.shape[-1]
    d = x.astype(np.int64) - attrs["x_zp"]
    c = n * d - d.sum(axis=-1, keepdims=True)  # n * (d - mean), exact
    v = (c * c).sum(axis=-1, keepdims=True)
    r = np.maximum(isqrt(v // n + attrs["eps_q"]), 1)  # n * sqrt(var + eps), floored
    inv = (np.int64(1) << INV_BITS) // r
    z = (c * inv + (np.int64(1) << (INV_BITS - Z_BITS - 1))) >> (INV_BITS - Z_BITS)  # Q20
    z = z * np.asarray(attrs["sign"], np.int64)
    y = qarith.rescale(
        z, np.asarray(attrs["multiplier"], np.int64), np.asarray(attrs["shift"], np.int64), -1
    )
    y = y + np.asarray(attrs["beta_q"], np.int64) + attrs["out_zp"]
    return np.clip(y, attrs["qmin"], attrs["qmax"]).astype(np.int8)


qc.register_qop(
    "qlayer_norm",
    ("x",),
    _qlayer_norm_infer,
    _qlayer_norm,
    "Integer LayerNorm over the last axis (n values): d = x - x_zp; c = n*d - sum(d); "
    "r = max(isqrt(sum(c*c) // n + eps_q), 1); z = (c * (2**50 // r) + 2**29) >> 30 (Q20); "
    "out = clamp(out_zp + beta_q[j] + rescale(sign[j] * z, M[j], shift[j]), qmin, qmax) "
    "(layer_norm_params builds M, shift, sign, beta_q and eps_q from gamma, beta and eps).",
    (
        qc.X_ZP,
        *qc.RESCALE_ATTRS,
        Attr("sign", "ints", REQUIRED, "sign of gamma per channel (-1, 0, 1)"),
        Attr("beta_q", "ints", REQUIRED, "beta / s_out per channel, rounded"),
        Attr("eps_q", "int", 0, "round(n**2 * eps / s_x**2)"),
        *qc.OUT_ATTRS,
    ),
    conformance=grid(
        _ln_point("basic", (4, 32), 0.05, 3, 0.04, -2),
        _ln_point("zero_points", (2, 3, 64), 0.02, -10, 0.1, 5),
        # rows of equal values have zero variance: only eps_q keeps the root positive
        _ln_point("edge", (3, 8), 1.0, 0, 0.5, 0, values="edge"),
        # qmin raised to the output zero point: the fused-relu clamp
        _ln_point("saturation", (4, 32), 0.05, 3, 0.04, -2, values="edge", qmin=-2),
        # a realistic width: sums of squares near 2**40
        _ln_point("wide", (2, 768), 0.05, 0, 0.05, 0),
    ),
)
