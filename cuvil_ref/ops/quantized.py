"""Quantized int8 ops: integer-only reference semantics of ``docs/semantics.md``, bit for bit.

Every compile-time constant is an attribute: zero points, fixed-point multipliers and shifts
(``ints`` tuples, from :func:`cuvil_ref.quant.arith.quantize_multiplier`), clamp bounds. A pack
therefore needs float math only in ``quantize`` and ``dequantize``. ``out_scale``/``out_zp`` give
the output's :class:`QuantParams` so users can dequantize; only ``out_zp`` enters the arithmetic.

Accumulating ops (qconv2d, qlinear, qmatmul) compute the exact integer sum with float64 BLAS:
operands are integers with ``|x - x_zp| <= 255`` and ``|w| <= 128``, and inference proves
``K * 255 * 128 < 2**31 < 2**53`` (``check_accumulator_bound``), so every partial sum is an exactly
representable integer whatever order BLAS adds in. qconv2d reuses the float conv's shift-and-GEMM
and im2col schemes on ``x - x_zp``; zero padding of that difference is padding ``x`` with ``x_zp``.

Pool tables: qavg_pool2d and qadaptive_avg_pool2d divide by a window count ``n`` that may vary by
position, so their ``multiplier``/``shift`` are tables indexed by ``n - 1``, entry ``n - 1`` being
``quantize_multiplier(s_in / (s_out * n))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError, ShapeError
from cuvil_ref.ir.dtypes import FLOAT_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, QuantParams, TensorType, format_shape
from cuvil_ref.ops.conv import (
    IM2COL_MAX_CHANNELS,
    IM2COL_MIN_TAPS,
    _conv2d_infer,
    _im2col,
    _phases,
    _shift_gemm,
)
from cuvil_ref.ops.linalg import matmul_shape
from cuvil_ref.ops.registry import REQUIRED, Attr, OpDef, register
from cuvil_ref.ops.shapes import conv_out_size, normalize_axis
from cuvil_ref.quant import arith

I8 = frozenset({DType.i8})
I8_I32 = frozenset({DType.i8, DType.i32})
F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
#: Longest reduction of int8 products that float32 sums exactly: K * 255 * 128 < 2**24.
F32_EXACT_K = (2**24 - 1) // arith.MAX_TERM_WEIGHT


class QuantizedOpError(ShapeError, QuantizationError):
    """A quantized op's attributes or operands break the int8 contract (also a ShapeError)."""


# --- attributes and inference helpers ------------------------------------------------------------

OUT_ATTRS = (
    Attr("out_scale", "float", REQUIRED, "output scale (float32), for the output QuantParams"),
    Attr("out_zp", "int", 0, "output zero point in [-128, 127]"),
    Attr("qmin", "int", -128, "lower clamp bound (a fused relu raises it to out_zp)"),
    Attr("qmax", "int", 127, "upper clamp bound (a fused relu6 lowers it)"),
)
RESCALE_ATTRS = (
    Attr("multiplier", "ints", REQUIRED, "fixed-point multipliers M in [0, 2**31)"),
    Attr("shift", "ints", REQUIRED, "right shifts in [1, 62], one per multiplier"),
)
WINDOW_ATTRS = (
    Attr("kernel", "ints", REQUIRED, "(kh, kw)"),
    Attr("stride", "ints", (1, 1), "(sh, sw)"),
    Attr("padding", "ints", (0, 0, 0, 0), "(top, left, bottom, right)"),
    Attr("ceil_mode", "bool", False, "ceil instead of floor for the output size (PyTorch rule)"),
)
CONV_ATTRS = (
    Attr("stride", "ints", (1, 1), "(sh, sw)"),
    Attr("padding", "ints", (0, 0, 0, 0), "(top, left, bottom, right); pads x with x_zp"),
    Attr("dilation", "ints", (1, 1), "(dh, dw)"),
    Attr("groups", "int", 1, "channel groups, as conv2d"),
)


def _fail(op: str, message: str) -> QuantizedOpError:
    return QuantizedOpError(f"op '{op}': {message}")


def _check_out(op: str, attrs: FrozenDict) -> None:
    if not -128 <= attrs["out_zp"] <= 127:
        raise _fail(op, f"out_zp {attrs['out_zp']} is outside [-128, 127]")
    if not -128 <= attrs["qmin"] <= attrs["qmax"] <= 127:
        raise _fail(op, f"need -128 <= qmin <= qmax <= 127, got [{attrs['qmin']}, {attrs['qmax']}]")
    if not (np.isfinite(attrs["out_scale"]) and attrs["out_scale"] > 0):
        raise _fail(op, f"out_scale must be positive and finite, got {attrs['out_scale']}")


def _check_rescale(
    op: str, attrs: FrozenDict, counts: tuple[int, ...], shared_shift: bool = False
) -> None:
    """``multiplier``/``shift`` have equal lengths among ``counts`` (one shift when
    ``shared_shift``) and lie in the spec ranges."""
    mult, shift = attrs["multiplier"], attrs["shift"]
    shifts_ok = len(shift) == 1 if shared_shift else len(shift) == len(mult)
    if not shifts_ok or len(mult) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise _fail(
            op, f"multiplier and shift need {want} entries each, got {len(mult)} and {len(shift)}"
        )
    if any(not 0 <= m < 2**31 for m in mult) or any(not 1 <= s <= 62 for s in shift):
        raise _fail(
            op,
            "multipliers must be in [0, 2**31) and shifts in [1, 62]; compute them "
            "with cuvil_ref.quant.arith.quantize_multiplier",
        )


def _check_zp(op: str, name: str, value: int) -> None:
    if not -128 <= value <= 127:
        raise _fail(op, f"{name} {value} is outside [-128, 127]")


def _want(op: str, t: TensorType, dtype: DType, what: str) -> None:
    if t.dtype != dtype:
        raise _fail(op, f"{what} must be {dtype.value}, got {t.dtype.value}")


def _qtype(shape: tuple[Dim, ...], attrs: FrozenDict, layout: str | None = None) -> TensorType:
    quant = QuantParams.per_tensor(float(np.float32(attrs["out_scale"])), attrs["out_zp"])
    return TensorType(shape, DType.i8, layout, quant)


def _static(op: str, d: Dim, what: str) -> int:
    if not isinstance(d, int):
        raise _fail(op, f"{what} must be static, got symbol '{d}'")
    return d


def _accumulator(op: str, k: int, two_activations: bool = False) -> None:
    try:
        arith.check_accumulator_bound(k, 0, two_activations=two_activations)
    except QuantizationError as exc:
        raise _fail(op, f"{exc}") from exc


def _requant(acc: np.ndarray, attrs: dict[str, Any], axis: int | None) -> np.ndarray:
    """The requantized int8 output: per-tensor when ``multiplier`` has one entry."""
    mult, shift = attrs["multiplier"], attrs["shift"]
    if len(mult) == 1:
        mult, shift, axis = mult[0], shift[0], None
    return arith.requantize_output(
        acc,
        np.asarray(mult, np.int64),
        np.asarray(shift, np.int64),
        attrs["out_zp"],
        attrs["qmin"],
        attrs["qmax"],
        axis=axis,
    )


def _centered(x: np.ndarray, zp: int, dtype: np.dtype = F64) -> np.ndarray:
    """``x - zp`` as float64 or float32 (exact either way: |x - zp| <= 255)."""
    return np.subtract(x, dtype.type(zp), dtype=dtype)


def _exact_matmul(a: np.ndarray, b: np.ndarray, k: int, term: int) -> np.ndarray:
    """``a @ b`` of integer-valued float64 operands, exactly, as int64: in float32 when every
    partial sum is below 2**24 (``k * term < 2**24``), else in float64 (below 2**53)."""
    dtype = F32 if k * term < 2**24 else F64
    out = np.matmul(a.astype(dtype, copy=False), b.astype(dtype, copy=False))
    return np.asarray(out).astype(np.int64)


def _qop(
    name: str,
    inputs: tuple[str, ...],
    infer: Callable[..., tuple[TensorType, ...]],
    reference: Callable[..., Any],
    doc: str,
    attrs: tuple[Attr, ...],
    dtypes: frozenset[DType] = I8,
) -> None:
    register(
        OpDef(
            name=name,
            inputs=inputs,
            infer=infer,
            reference=reference,
            doc=doc,
            attrs=attrs,
            category="quantized",
            dtypes=dtypes,
        )
    )


# --- float boundary ------------------------------------------------------------------------------

BOUNDARY_ATTRS = (
    Attr("scale", "floats", REQUIRED, "one scale (per tensor) or one per channel along axis"),
    Attr("zero_point", "ints", REQUIRED, "zero points, as many as scales"),
    Attr("axis", "int?", None, "channel axis for per-channel params, None per tensor"),
)


def _boundary_params(op: str, t: TensorType, attrs: FrozenDict) -> QuantParams:
    scale, zp, axis = attrs["scale"], attrs["zero_point"], attrs["axis"]
    if axis is not None:
        axis = normalize_axis(axis, t.rank)
        if isinstance(t.shape[axis], int) and len(scale) != t.shape[axis]:
            raise _fail(op, f"{len(scale)} scales for axis {axis} of size {t.shape[axis]}")
    if len(scale) != len(zp) or (axis is None and len(scale) != 1):
        raise _fail(
            op,
            f"needs one scale and zero point (or one per channel with axis), got "
            f"{len(scale)} and {len(zp)}",
        )
    if not all(np.isfinite(s) and s > 0 for s in scale):
        raise _fail(op, f"scales must be positive and finite, got {scale}")
    f32 = tuple(float(np.float32(s)) for s in scale)
    return QuantParams(f32, tuple(zp), axis)


def _quantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    qp = _boundary_params("quantize", types[0], attrs)
    if any(not -128 <= z <= 127 for z in qp.zero_point):
        raise _fail("quantize", f"zero points must be in [-128, 127], got {qp.zero_point}")
    return (TensorType(types[0].shape, DType.i8, types[0].layout, qp),)


def _boundary_args(attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    scale = np.asarray(attrs["scale"], np.float32)
    zp = np.asarray(attrs["zero_point"], np.int64)
    return (scale, zp) if attrs["axis"] is not None else (scale[0], zp[0])


def _quantize(x: np.ndarray, **attrs: Any) -> np.ndarray:
    scale, zp = _boundary_args(attrs)
    return arith.quantize(x, scale, zp, axis=attrs["axis"])


_qop(
    "quantize",
    ("x",),
    _quantize_infer,
    _quantize,
    "q = clamp(rint(f32(x) / scale) + zero_point, -128, 127) as i8: one float32 division, "
    "half-to-even; NaN -> zero_point, +-inf saturate. Per channel along `axis` if given.",
    BOUNDARY_ATTRS,
    FLOAT_DTYPES,
)


def _dequantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    _boundary_params("dequantize", types[0], attrs)
    return (TensorType(types[0].shape, DType.f32, types[0].layout),)


def _dequantize(q: np.ndarray, **attrs: Any) -> np.ndarray:
    scale, zp = _boundary_args(attrs)
    return arith.dequantize(q, scale, zp, axis=attrs["axis"])


_qop(
    "dequantize",
    ("q",),
    _dequantize_infer,
    _dequantize,
    "y = f32(q - zero_point) * f32(scale): one float32 multiply; i8 or i32 input.",
    BOUNDARY_ATTRS,
    I8_I32,
)


# --- requantize, qadd, qmul ----------------------------------------------------------------------


def _requantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    _check_out("requantize", attrs)
    _check_zp("requantize", "x_zp", attrs["x_zp"])
    _check_rescale("requantize", attrs, (1,))
    return (_qtype(types[0].shape, attrs, types[0].layout),)


def _requantize(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return _requant(x.astype(np.int64) - attrs["x_zp"], attrs, None)


_qop(
    "requantize",
    ("x",),
    _requantize_infer,
    _requantize,
    "out = clamp(out_zp + rescale(x - x_zp, M, shift), qmin, qmax); M, shift from s_in/s_out.",
    (Attr("x_zp", "int", 0, "input zero point"), *RESCALE_ATTRS, *OUT_ATTRS),
)


def _binary_infer(op: str, counts: tuple[int, ...]) -> Callable[..., tuple[TensorType, ...]]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        from cuvil_ref.ops.shapes import broadcast_shapes

        _check_out(op, attrs)
        _check_zp(op, "a_zp", attrs["a_zp"])
        _check_zp(op, "b_zp", attrs["b_zp"])
        _check_rescale(op, attrs, counts, shared_shift=op == "qadd")
        layout = types[0].layout if types[0].layout == types[1].layout else None
        return (_qtype(broadcast_shapes(types[0].shape, types[1].shape), attrs, layout),)

    return infer


ZP_AB = (Attr("a_zp", "int", 0, "zero point of a"), Attr("b_zp", "int", 0, "zero point of b"))


def _qadd(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    return arith.qadd_int(
        a,
        attrs["a_zp"],
        b,
        attrs["b_zp"],
        attrs["multiplier"],
        attrs["shift"][0],
        attrs["out_zp"],
        attrs["qmin"],
        attrs["qmax"],
    )


_qop(
    "qadd",
    ("a", "b"),
    _binary_infer("qadd", (2,)),
    _qadd,
    "acc = (a - a_zp) * M_a + (b - b_zp) * M_b in int64 with ONE shared shift "
    "(multiplier = (M_a, M_b), shift = (shift,), from shared_shift_multipliers([s_a/s_out, "
    "s_b/s_out])); out = clamp(out_zp + ((acc + 2**(shift-1)) >> shift), qmin, qmax). "
    "Broadcasts.",
    (*ZP_AB, *RESCALE_ATTRS, *OUT_ATTRS),
)


def _qmul(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    return arith.qmul_int(
        a,
        attrs["a_zp"],
        b,
        attrs["b_zp"],
        attrs["multiplier"][0],
        attrs["shift"][0],
        attrs["out_zp"],
        attrs["qmin"],
        attrs["qmax"],
    )


_qop(
    "qmul",
    ("a", "b"),
    _binary_infer("qmul", (1,)),
    _qmul,
    "acc = (a - a_zp) * (b - b_zp); out = clamp(out_zp + rescale(acc, M, shift), qmin, qmax) "
    "with M, shift from s_a * s_b / s_out. Broadcasts.",
    (*ZP_AB, *RESCALE_ATTRS, *OUT_ATTRS),
)


def _qconcat_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    _check_out("qconcat", attrs)
    n = len(types)
    if len(attrs["x_zp"]) != n:
        raise _fail("qconcat", f"x_zp needs {n} entries (one per input), got {len(attrs['x_zp'])}")
    for z in attrs["x_zp"]:
        _check_zp("qconcat", "x_zp", z)
    _check_rescale("qconcat", attrs, (n,))
    rank = types[0].rank
    axis = normalize_axis(attrs["axis"], rank)
    total = 0
    for t in types:
        if t.rank != rank or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, types[0].shape)) if i != axis
        ):
            shown = ", ".join(f"[{format_shape(u.shape)}]" for u in types)
            raise ShapeError(f"qconcat along axis {axis}: shapes {shown} differ off that axis")
        total += _static("qconcat", t.shape[axis], "the concatenated dim")
    shape = (*types[0].shape[:axis], total, *types[0].shape[axis + 1 :])
    return (_qtype(shape, attrs, types[0].layout),)


def _qconcat(*xs: np.ndarray, **attrs: Any) -> np.ndarray:
    parts = [
        arith.requantize_output(
            x.astype(np.int64) - z, m, s, attrs["out_zp"], attrs["qmin"], attrs["qmax"]
        )
        for x, z, m, s in zip(xs, attrs["x_zp"], attrs["multiplier"], attrs["shift"], strict=True)
    ]
    return np.concatenate(parts, axis=attrs["axis"])


_qop(
    "qconcat",
    ("*xs",),
    _qconcat_infer,
    _qconcat,
    "Each input requantized to the output's params, out_i = clamp(out_zp + rescale(x_i - "
    "x_zp[i], M[i], shift[i]), qmin, qmax) with M[i], shift[i] from s_i / s_out, then "
    "concatenated along `axis`. Equal params give M = 2**30, shift = 30 (identity).",
    (
        Attr("axis", "int", 0, "concatenation axis"),
        Attr("x_zp", "ints", REQUIRED, "zero point of each input"),
        *RESCALE_ATTRS,
        *OUT_ATTRS,
    ),
)


# --- accumulating ops: qconv2d, qlinear, qmatmul -------------------------------------------------


def _bias_check(op: str, types: tuple[TensorType, ...], channels: Dim) -> None:
    if len(types) == 3:
        _want(op, types[2], DType.i32, "bias")
        if types[2].shape != (channels,):
            raise _fail(
                op, f"bias must have shape [{channels}], got [{format_shape(types[2].shape)}]"
            )


def _qconv2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, w = types[0], types[1]
    _want("qconv2d", x, DType.i8, "x")
    _want("qconv2d", w, DType.i8, "weight")
    conv_attrs = FrozenDict({k: attrs[k] for k in ("stride", "padding", "dilation", "groups")})
    (out,) = _conv2d_infer((x, w), conv_attrs)
    o, cg, kh, kw = w.shape
    _bias_check("qconv2d", types, o)
    _check_out("qconv2d", attrs)
    _check_zp("qconv2d", "x_zp", attrs["x_zp"])
    _check_rescale("qconv2d", attrs, (1, o))
    _accumulator("qconv2d", int(cg) * int(kh) * int(kw))
    return (_qtype(out.shape, attrs, x.layout),)


def _tap_gemm(
    xd: np.ndarray,
    weight: np.ndarray,
    groups: int,
    stride: tuple[int, int],
    padding: tuple[int, ...],
    dilation: tuple[int, int],
    oh: int,
    ow: int,
) -> np.ndarray:
    """conv2d's shift-and-GEMM, exact for integers with a long total reduction: each tap's GEMM
    (reduction Cg <= F32_EXACT_K) runs in float32, the taps accumulate in float64. ``xd`` is
    ``x - x_zp`` in float32. Returns [N, OH, OW, O]."""
    n = xd.shape[0]
    o, cg, kh, kw = weight.shape
    og = o // groups
    (sh, sw), (dh, dw) = stride, dilation
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    flat, wq = _phases(xd, (padding[0], padding[1]), stride, F32, (oh, ow), span)
    m = oh * wq
    taps = weight.astype(F32).reshape(groups, og, cg, kh, kw).transpose(3, 4, 0, 2, 1)
    taps = np.ascontiguousarray(taps)
    shape = (n, m, groups, og) if groups > 1 else (n, m, o)
    out = np.zeros(shape, dtype=F64)
    tmp = np.empty(shape, dtype=F32)
    for i in range(kh):
        qi, a = divmod(i * dh, sh)
        for j in range(kw):
            qj, b = divmod(j * dw, sw)
            start = qi * wq + qj
            patch = flat[:, a, b, start : start + m, :]
            if groups == 1:
                np.matmul(patch, taps[i, j, 0], out=tmp)
            else:
                grouped = patch.reshape(n, m, groups, cg).transpose(0, 2, 1, 3)
                np.matmul(grouped, taps[i, j], out=tmp.transpose(0, 2, 1, 3))
            out += tmp
    return out.reshape(n, oh, wq, o)[:, :, :ow, :]


def _qconv2d(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, **attrs: Any
) -> np.ndarray:
    stride, padding = attrs["stride"], attrs["padding"]
    dilation, groups = attrs["dilation"], attrs["groups"]
    n, _, h, w = x.shape
    o, cg, kh, kw = weight.shape
    oh = int(conv_out_size(h, kh, stride[0], padding[0], padding[2], dilation[0]))
    ow = int(conv_out_size(w, kw, stride[1], padding[1], padding[3], dilation[1]))
    if n * o * oh * ow == 0:
        return np.full((n, o, oh, ow), attrs["out_zp"], dtype=np.int8)
    depthwise = cg == 1 and groups > 1
    thin = cg < IM2COL_MAX_CHANNELS or kh * kw >= IM2COL_MIN_TAPS
    scheme = _im2col if thin and not depthwise else _shift_gemm
    geometry = (groups, stride, padding, dilation, oh, ow)
    if cg * kh * kw <= F32_EXACT_K:  # the whole reduction is exact in float32
        xd = _centered(x, attrs["x_zp"], F32)
        acc = scheme(xd, weight.astype(F32), F32, *geometry)
    elif scheme is _shift_gemm and cg <= F32_EXACT_K:  # each tap is exact in float32
        acc = _tap_gemm(_centered(x, attrs["x_zp"], F32), weight, *geometry)
    else:
        acc = scheme(_centered(x, attrs["x_zp"]), weight.astype(F64), F64, *geometry)
    acc = acc.astype(np.int64)  # [N, OH, OW, O], exact integers
    if bias is not None:
        acc += bias.astype(np.int64)
    return _requant(acc, attrs, -1).transpose(0, 3, 1, 2)


_qop(
    "qconv2d",
    ("x", "weight", "bias?"),
    _qconv2d_infer,
    _qconv2d,
    "acc[n, o, p, q] = bias[o] + sum_{c, i, j} (xpad - x_zp) * weight[o, c, i, j] in int32 "
    "(indices as conv2d; xpad is x padded with x_zp, so padding adds 0); out = clamp(out_zp + "
    "rescale(acc, M[o], shift[o]), qmin, qmax). x i8 NCHW, weight i8 OIHW (symmetric), bias "
    "i32; one multiplier for all channels or one per output channel.",
    (*CONV_ATTRS, Attr("x_zp", "int", 0, "input zero point"), *RESCALE_ATTRS, *OUT_ATTRS),
    I8_I32,
)


def _qlinear_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, w = types[0], types[1]
    _want("qlinear", x, DType.i8, "x")
    _want("qlinear", w, DType.i8, "weight")
    if w.rank != 2 or x.rank == 0 or x.shape[-1] != w.shape[1]:
        raise ShapeError(
            f"qlinear needs x [..., in] and weight [out, in], got "
            f"[{format_shape(x.shape)}] and [{format_shape(w.shape)}]"
        )
    o = _static("qlinear", w.shape[0], "the output features")
    _bias_check("qlinear", types, o)
    _check_out("qlinear", attrs)
    _check_zp("qlinear", "x_zp", attrs["x_zp"])
    _check_rescale("qlinear", attrs, (1, o))
    _accumulator("qlinear", _static("qlinear", w.shape[1], "the input features"))
    return (_qtype((*x.shape[:-1], o), attrs),)


def _qlinear(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, **attrs: Any
) -> np.ndarray:
    k = weight.shape[1]
    acc = _exact_matmul(_centered(x, attrs["x_zp"]), weight.T, k, arith.MAX_TERM_WEIGHT)
    if bias is not None:
        acc += bias.astype(np.int64)
    return _requant(acc, attrs, -1)


_qop(
    "qlinear",
    ("x", "weight", "bias?"),
    _qlinear_infer,
    _qlinear,
    "acc[..., o] = bias[o] + sum_i (x[..., i] - x_zp) * weight[o, i] in int32; out = "
    "clamp(out_zp + rescale(acc, M[o], shift[o]), qmin, qmax). weight i8 [out, in], bias i32.",
    (Attr("x_zp", "int", 0, "input zero point"), *RESCALE_ATTRS, *OUT_ATTRS),
    I8_I32,
)


def _qmatmul_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    a, b = types
    _check_out("qmatmul", attrs)
    _check_zp("qmatmul", "a_zp", attrs["a_zp"])
    _check_zp("qmatmul", "b_zp", attrs["b_zp"])
    _check_rescale("qmatmul", attrs, (1,))
    shape = matmul_shape(a.shape, b.shape)
    _accumulator("qmatmul", _static("qmatmul", a.shape[-1], "the contraction dim"), True)
    return (_qtype(shape, attrs),)


def _qmatmul(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    k = a.shape[-1]
    da, db = _centered(a, attrs["a_zp"]), _centered(b, attrs["b_zp"])
    acc = _exact_matmul(da, db, k, arith.MAX_TERM_TWO_ACTIVATIONS)
    return _requant(acc, attrs, None)


_qop(
    "qmatmul",
    ("a", "b"),
    _qmatmul_infer,
    _qmatmul,
    "acc = sum_k (a[..., i, k] - a_zp) * (b[..., k, j] - b_zp) in int32 (torch.matmul shapes); "
    "out = clamp(out_zp + rescale(acc, M, shift), qmin, qmax), M, shift from s_a*s_b/s_out.",
    (*ZP_AB, *RESCALE_ATTRS, *OUT_ATTRS),
)


# --- pooling -------------------------------------------------------------------------------------


def _window_out(
    op: str, x: TensorType, attrs: FrozenDict, dilation: tuple[int, int]
) -> tuple[Dim, Dim]:
    k, s, p = attrs["kernel"], attrs["stride"], attrs["padding"]
    if x.rank != 4 or len(k) != 2 or len(s) != 2 or len(p) != 4 or min(*k, *s) < 1 or min(p) < 0:
        raise ShapeError(
            f"op '{op}': needs x [N,C,H,W], kernel (2), stride (2) >= 1 and "
            f"padding (4) >= 0; got x [{format_shape(x.shape)}], {k}, {s}, {p}"
        )
    ceil = attrs["ceil_mode"]
    oh = conv_out_size(x.shape[2], k[0], s[0], p[0], p[2], dilation[0], ceil)
    ow = conv_out_size(x.shape[3], k[1], s[1], p[1], p[3], dilation[1], ceil)
    return oh, ow


def _qmax_pool2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    oh, ow = _window_out("qmax_pool2d", x, attrs, attrs["dilation"])
    return (TensorType((x.shape[0], x.shape[1], oh, ow), DType.i8, x.layout, x.quant),)


def _qmax_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (kh, kw), (sh, sw), (pt, pl, _, _) = attrs["kernel"], attrs["stride"], attrs["padding"]
    dh, dw = attrs["dilation"]
    n, c, h, w = x.shape
    oh = int(conv_out_size(h, kh, sh, pt, attrs["padding"][2], dh, attrs["ceil_mode"]))
    ow = int(conv_out_size(w, kw, sw, pl, attrs["padding"][3], dw, attrs["ceil_mode"]))
    hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = np.full((n, c, hp, wp), -129, dtype=np.int16)  # below every int8: padding never wins
    xp[:, :, pt : pt + h, pl : pl + w] = x
    out = np.full((n, c, oh, ow), -129, dtype=np.int16)
    for i in range(kh):
        for j in range(kw):
            tap = xp[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            np.maximum(out, tap, out=out)
    return out.astype(np.int8)


_qop(
    "qmax_pool2d",
    ("x",),
    _qmax_pool2d_infer,
    _qmax_pool2d,
    "y = max of the int8 values in each window (as max_pool2d; padding never wins); the "
    "output keeps the input's scale and zero point.",
    (*WINDOW_ATTRS, Attr("dilation", "ints", (1, 1), "(dh, dw)")),
)


def _window_sums(
    d: np.ndarray, rows: tuple[np.ndarray, np.ndarray], cols: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Sums of ``d`` [N, C, H, W] over windows [r0, r1) x [c0, c1), via an integral image."""
    n, c, h, w = d.shape
    s = np.zeros((n, c, h + 1, w + 1), dtype=np.int64)
    np.cumsum(np.cumsum(d, axis=2), axis=3, out=s[:, :, 1:, 1:])
    (r0, r1), (c0, c1) = rows, cols

    def at(r: np.ndarray, q: np.ndarray) -> np.ndarray:
        return s[:, :, r[:, None], q[None, :]]

    return at(r1, c1) - at(r0, c1) - at(r1, c0) + at(r0, c0)


def _avg_requant(
    x: np.ndarray, attrs: dict[str, Any], rows: tuple[np.ndarray, ...], cols: tuple[np.ndarray, ...]
) -> np.ndarray:
    """``rows``/``cols`` = (start, end, count) per output index, start/end clipped to the input."""
    acc = _window_sums(x.astype(np.int64) - attrs["x_zp"], rows[:2], cols[:2])
    count = rows[2][:, None] * cols[2][None, :]
    table = len(attrs["multiplier"])
    if count.size and (count.min() < 1 or count.max() > table):
        raise QuantizedOpError(
            f"average pool windows count {count.min()}..{count.max()} "
            f"elements but the multiplier table covers 1..{table}"
        )
    mult = np.asarray(attrs["multiplier"], np.int64)[count - 1]
    shift = np.asarray(attrs["shift"], np.int64)[count - 1]
    return arith.requantize_output(acc, mult, shift, attrs["out_zp"], attrs["qmin"], attrs["qmax"])


def avg_pool_windows(
    size: int, out: int, k: int, s: int, lo: int, hi: int, include_pad: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, count) of each avg_pool2d window along one axis (PyTorch's divisor rule)."""
    start = np.arange(out, dtype=np.int64) * s - lo
    end = start + k
    padded_count = np.minimum(end, size + hi) - start
    start_c, end_c = np.clip(start, 0, size), np.clip(end, 0, size)
    count = padded_count if include_pad else end_c - start_c
    return start_c, end_c, count


def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, count) of each adaptive pooling window: [floor(i*L/O), ceil((i+1)*L/O))."""
    i = np.arange(out, dtype=np.int64)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    return start, end, end - start


def _avg_infer(
    op: str, shape: Callable[[TensorType, FrozenDict], tuple[Dim, Dim]]
) -> Callable[..., tuple[TensorType, ...]]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        x = types[0]
        _check_out(op, attrs)
        _check_zp(op, "x_zp", attrs["x_zp"])
        if len(attrs["multiplier"]) != len(attrs["shift"]) or not attrs["multiplier"]:
            raise _fail(
                op,
                "multiplier and shift are tables of equal, non-zero length "
                "(entry n-1 for a window of n elements)",
            )
        _check_rescale(op, attrs, (len(attrs["multiplier"]),))
        oh, ow = shape(x, attrs)
        return (_qtype((x.shape[0], x.shape[1], oh, ow), attrs, x.layout),)

    return infer


def _qavg_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (kh, kw), (sh, sw), p = attrs["kernel"], attrs["stride"], attrs["padding"]
    h, w = x.shape[2:]
    oh = int(conv_out_size(h, kh, sh, p[0], p[2], 1, attrs["ceil_mode"]))
    ow = int(conv_out_size(w, kw, sw, p[1], p[3], 1, attrs["ceil_mode"]))
    inc = attrs["count_include_pad"]
    rows = avg_pool_windows(h, oh, kh, sh, p[0], p[2], inc)
    cols = avg_pool_windows(w, ow, kw, sw, p[1], p[3], inc)
    return _avg_requant(x, attrs, rows, cols)


AVG_ATTRS = (
    Attr("x_zp", "int", 0, "input zero point"),
    Attr("multiplier", "ints", REQUIRED, "table: entry n-1 is M for a window of n"),
    Attr("shift", "ints", REQUIRED, "table: entry n-1 is the shift for a window of n"),
    *OUT_ATTRS,
)

_qop(
    "qavg_pool2d",
    ("x",),
    _avg_infer("qavg_pool2d", lambda x, a: _window_out("qavg_pool2d", x, a, (1, 1))),
    _qavg_pool2d,
    "acc = sum over the window of (x - x_zp) (padding adds 0); n = counted elements "
    "(avg_pool2d's count_include_pad rule, ceil-mode overhang never counted); out = "
    "clamp(out_zp + rescale(acc, M[n-1], shift[n-1]), qmin, qmax), table entries from "
    "s_in / (s_out * n).",
    (
        *WINDOW_ATTRS,
        Attr("count_include_pad", "bool", True, "count padding in the divisor"),
        *AVG_ATTRS,
    ),
)


def _adaptive_shape(x: TensorType, attrs: FrozenDict) -> tuple[Dim, Dim]:
    size = attrs["output_size"]
    if x.rank != 4 or len(size) != 2 or min(size) < 1:
        raise ShapeError(
            f"qadaptive_avg_pool2d needs x [N,C,H,W] and output_size (2) >= 1, got "
            f"[{format_shape(x.shape)}] and {size}"
        )
    for d in x.shape[2:]:
        _static("qadaptive_avg_pool2d", d, "spatial dims")
    return size[0], size[1]


def _qadaptive_avg_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (oh, ow), (h, w) = attrs["output_size"], x.shape[2:]
    return _avg_requant(x, attrs, adaptive_windows(h, oh), adaptive_windows(w, ow))


_qop(
    "qadaptive_avg_pool2d",
    ("x",),
    _avg_infer("qadaptive_avg_pool2d", _adaptive_shape),
    _qadaptive_avg_pool2d,
    "Windows [floor(i*H/OH), ceil((i+1)*H/OH)) x (same for W); acc = sum of (x - x_zp), "
    "n = window size; out = clamp(out_zp + rescale(acc, M[n-1], shift[n-1]), qmin, qmax).",
    (Attr("output_size", "ints", REQUIRED, "(OH, OW)"), *AVG_ATTRS),
)
