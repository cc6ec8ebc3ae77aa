"""Quantized int8 ops at the float boundary and elementwise: quantize, dequantize, requantize,
qadd, qmul and qconcat, with the integer-only reference semantics of ``docs/semantics.md``, bit
for bit. Only ``quantize`` and ``dequantize`` use float math; the attribute conventions shared by
every quantized op are in :mod:`cuvil_ref.ops.quant_common`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import FLOAT_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import QuantParams, TensorType, format_shape
from cuvil_ref.ops import qarith
from cuvil_ref.ops import quant_common as qc
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import REQUIRED, Attr
from cuvil_ref.ops.shapes import broadcast_shapes, normalize_axis

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
            raise qc.fail(op, f"{len(scale)} scales for axis {axis} of size {t.shape[axis]}")
    if len(scale) != len(zp) or (axis is None and len(scale) != 1):
        raise qc.fail(
            op,
            f"needs one scale and zero point (or one per channel with axis), got "
            f"{len(scale)} and {len(zp)}",
        )
    if not all(np.isfinite(s) and s > 0 for s in scale):
        raise qc.fail(op, f"scales must be positive and finite, got {scale}")
    f32 = tuple(float(np.float32(s)) for s in scale)
    return QuantParams(f32, tuple(zp), axis)


def _quantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    qp = _boundary_params("quantize", types[0], attrs)
    if any(not -128 <= z <= 127 for z in qp.zero_point):
        raise qc.fail("quantize", f"zero points must be in [-128, 127], got {qp.zero_point}")
    return (TensorType(types[0].shape, DType.i8, types[0].layout, qp),)


def _boundary_args(attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    scale = np.asarray(attrs["scale"], np.float32)
    zp = np.asarray(attrs["zero_point"], np.int64)
    return (scale, zp) if attrs["axis"] is not None else (scale[0], zp[0])


def _quantize(x: np.ndarray, **attrs: Any) -> np.ndarray:
    scale, zp = _boundary_args(attrs)
    return qarith.quantize(x, scale, zp, axis=attrs["axis"])


qc.register_qop(
    "quantize",
    ("x",),
    _quantize_infer,
    _quantize,
    "q = clamp(rint(f32(x) / scale) + zero_point, -128, 127) as i8: one float32 division, "
    "half-to-even; NaN -> zero_point, +-inf saturate. Per channel along `axis` if given.",
    BOUNDARY_ATTRS,
    FLOAT_DTYPES,
    family="quantize",
    conformance=grid(
        point("basic", scale=(0.05,), zero_point=(-3,), shapes=((4, 6),)),
        point("edge", scale=(1.0,), zero_point=(0,), shapes=((4, 6),), values="edge"),
        # x / scale lands exactly on k + 1/2, k odd and even, both signs: half to even
        point("tie", scale=(0.25,), zero_point=(0,), shapes=((6, 8),), values="ties:0.25"),
        point("tie", scale=(0.5,), zero_point=(10,), shapes=((6, 8),), values="ties:0.5"),
        point("saturation", scale=(1e-3,), zero_point=(0,), shapes=((4, 6),)),
        point("saturation", scale=(0.05,), zero_point=(100,), shapes=((4, 6),), values="large:20"),
        point("zero_point", scale=(0.1,), zero_point=(-128,), shapes=((4, 6),)),
        # distinct scales and zero points per channel: per-tensor params give other bits
        point("per_channel", scale=(0.1, 0.2, 0.05), zero_point=(0, 0, 0), axis=1,
              shapes=((2, 3, 4),)),
        point("per_channel", scale=(0.02, 0.5, 0.07, 0.3), zero_point=(1, -2, 0, 5), axis=0,
              shapes=((4, 5),)),
        point("f16", scale=(0.25,), zero_point=(1,), shapes=((5, 5),), dtypes="f16",
              values="edge"),
    ),
)


def _dequantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    _boundary_params("dequantize", types[0], attrs)
    return (TensorType(types[0].shape, DType.f32, types[0].layout),)


def _dequantize(q: np.ndarray, **attrs: Any) -> np.ndarray:
    scale, zp = _boundary_args(attrs)
    return qarith.dequantize(q, scale, zp, axis=attrs["axis"])


qc.register_qop(
    "dequantize",
    ("q",),
    _dequantize_infer,
    _dequantize,
    "y = f32(q - zero_point) * f32(scale): one float32 multiply; i8 or i32 input.",
    BOUNDARY_ATTRS,
    qc.I8_I32,
    family="quantize",
    conformance=grid(
        point("basic", scale=(0.05,), zero_point=(-3,), shapes=((4, 6),), dtypes="i8",
              values="edge"),
        point("per_channel", scale=(0.1, 0.2, 0.3), zero_point=(0, 5, -7), axis=0,
              shapes=((3, 2, 2),), dtypes="i8", values="full"),
        point("int32", scale=(1e-4,), zero_point=(0,), shapes=((8,),), dtypes="i32"),
    ),
)


# --- requantize, qadd, qmul ----------------------------------------------------------------------


def _requantize_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    qc.check_out("requantize", attrs)
    qc.check_zp("requantize", "x_zp", attrs["x_zp"])
    qc.check_rescale("requantize", attrs, (1,))
    return (qc.qtype(types[0].shape, attrs, types[0].layout),)


def _requantize(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return qc.requant(x.astype(np.int64) - attrs["x_zp"], attrs, None)


qc.register_qop(
    "requantize",
    ("x",),
    _requantize_infer,
    _requantize,
    "out = clamp(out_zp + rescale(x - x_zp, M, shift), qmin, qmax); M, shift from s_in/s_out.",
    (qc.X_ZP, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    family="requantize",
    conformance=grid(
        *(
            point(rule, x_zp=xz, out_scale=so, out_zp=oz, qmin=lo, qmax=hi, hints={"ratio": r},
                  shapes=((4, 8),), dtypes="i8", values="edge")
            for rule, xz, so, oz, lo, hi, r in (
                ("basic", 3, 0.05, -5, -128, 127, 0.6),
                ("zero_point", -128, 0.02, -128, -128, 127, 1.5),
                ("saturation", 0, 0.002, 10, 10, 127, 15.0),  # a fused relu's bound
                ("zero_point", 127, 0.5, 127, -128, 127, 0.06),
                ("saturation", -7, 0.04, -20, -20, 80, 0.75),  # a relu6-like upper bound
            )
        ),
        # (x - x_zp) * ratio is exactly k + 1/2 for odd x: rescale rounds halves up (+inf)
        point("tie", x_zp=0, out_scale=0.1, hints={"ratio": 0.5}, shapes=((6, 8),), dtypes="i8",
              values="full"),
        point("tie", x_zp=1, out_scale=0.1, out_zp=-3, hints={"ratio": 0.25}, shapes=((6, 8),),
              dtypes="i8", values="full"),
    ),
)


def _qbinary_grid() -> dict[str, list[tuple[Any, ...]]]:
    """(rule, shape a, shape b, a_zp, b_zp, out_scale, out_zp, ratio hint) for qadd and qmul,
    from float scales (s_a, s_b, s_out) as the quantizer would see them."""
    rows = [
        ("basic", (4, 8), (4, 8), 0.05, 3, 0.04, -2, 0.08, 1),
        ("zero_point", (2, 3, 4), (4,), 0.5, -128, 0.01, 127, 0.02, 0),
        ("broadcast", (3, 1), (1, 5), 0.1, 0, 0.1, 0, 0.1, 0),
        ("saturation", (6, 6), (6, 6), 0.02, 10, 0.03, -10, 1e-3, 5),
    ]
    out: dict[str, list[tuple[Any, ...]]] = {"shared_ratios": [], "ratio": []}
    for rule, sa, sb, s_a, za, s_b, zb, s_o, zo in rows:
        out["shared_ratios"].append((rule, sa, sb, za, zb, s_o, zo, (s_a / s_o, s_b / s_o)))
        out["ratio"].append((rule, sa, sb, za, zb, s_o, zo, s_a * s_b / s_o))
    # ratios of exactly 1/2: odd sums and products land on halves, which round up (+inf)
    out["shared_ratios"].append(("tie", (6, 8), (6, 8), 0, 0, 0.1, 0, (0.5, 0.5)))
    out["ratio"].append(("tie", (6, 8), (6, 8), 0, 0, 0.1, 0, 0.5))
    return out


_QBINARY_GRID = _qbinary_grid()


def _binary_infer(op: str, counts: tuple[int, ...]) -> Callable[..., tuple[TensorType, ...]]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        qc.check_out(op, attrs)
        qc.check_zp(op, "a_zp", attrs["a_zp"])
        qc.check_zp(op, "b_zp", attrs["b_zp"])
        qc.check_rescale(op, attrs, counts, shared_shift=op == "qadd")
        layout = types[0].layout if types[0].layout == types[1].layout else None
        return (qc.qtype(broadcast_shapes(types[0].shape, types[1].shape), attrs, layout),)

    return infer


def _qadd(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    return qarith.qadd_int(
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


qc.register_qop(
    "qadd",
    ("a", "b"),
    _binary_infer("qadd", (2,)),
    _qadd,
    "acc = (a - a_zp) * M_a + (b - b_zp) * M_b in int64 with ONE shared shift "
    "(multiplier = (M_a, M_b), shift = (shift,), from shared_shift_multipliers([s_a/s_out, "
    "s_b/s_out])); out = clamp(out_zp + ((acc + 2**(shift-1)) >> shift), qmin, qmax). "
    "Broadcasts.",
    (*qc.ZP_AB, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    family="qbinary",
    conformance=grid(
        *(
            point(rule, a_zp=za, b_zp=zb, out_scale=so, out_zp=zo, hints={"shared_ratios": r},
                  shapes=(sa, sb), dtypes="i8", values="full")
            for rule, sa, sb, za, zb, so, zo, r in _QBINARY_GRID["shared_ratios"]
        ),
    ),
)


def _qmul(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    return qarith.qmul_int(
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


qc.register_qop(
    "qmul",
    ("a", "b"),
    _binary_infer("qmul", (1,)),
    _qmul,
    "acc = (a - a_zp) * (b - b_zp); out = clamp(out_zp + rescale(acc, M, shift), qmin, qmax) "
    "with M, shift from s_a * s_b / s_out. Broadcasts.",
    (*qc.ZP_AB, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    family="qbinary",
    conformance=grid(
        *(
            point(rule, a_zp=za, b_zp=zb, out_scale=so, out_zp=zo, hints={"ratio": r},
                  shapes=(sa, sb), dtypes="i8", values="full")
            for rule, sa, sb, za, zb, so, zo, r in _QBINARY_GRID["ratio"]
        ),
    ),
)


def _qconcat_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    qc.check_out("qconcat", attrs)
    n = len(types)
    if len(attrs["x_zp"]) != n:
        got = len(attrs["x_zp"])
        raise qc.fail("qconcat", f"x_zp needs {n} entries (one per input), got {got}")
    for z in attrs["x_zp"]:
        qc.check_zp("qconcat", "x_zp", z)
    qc.check_rescale("qconcat", attrs, (n,))
    rank = types[0].rank
    axis = normalize_axis(attrs["axis"], rank)
    total = 0
    for t in types:
        if t.rank != rank or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, types[0].shape)) if i != axis
        ):
            shown = ", ".join(f"[{format_shape(u.shape)}]" for u in types)
            raise ShapeError(f"qconcat along axis {axis}: shapes {shown} differ off that axis")
        total += qc.static("qconcat", t.shape[axis], "the concatenated dim")
    shape = (*types[0].shape[:axis], total, *types[0].shape[axis + 1 :])
    return (qc.qtype(shape, attrs, types[0].layout),)


def _qconcat(*xs: np.ndarray, **attrs: Any) -> np.ndarray:
    parts = [
        qarith.requantize_output(
            x.astype(np.int64) - z, m, s, attrs["out_zp"], attrs["qmin"], attrs["qmax"]
        )
        for x, z, m, s in zip(xs, attrs["x_zp"], attrs["multiplier"], attrs["shift"], strict=True)
    ]
    return np.concatenate(parts, axis=attrs["axis"])


qc.register_qop(
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
        *qc.RESCALE_ATTRS,
        *qc.OUT_ATTRS,
    ),
    family="requantize",
    conformance=grid(
        point("basic", axis=1, x_zp=(0, -4, 3), out_scale=0.08, out_zp=1,
              hints={"ratios": (0.05 / 0.08, 0.1 / 0.08, 0.05 / 0.08)},
              shapes=((2, 3), (2, 1), (2, 4)), dtypes="i8", values="full"),
        point("identity", axis=0, x_zp=(2, 2), out_scale=0.1, out_zp=2,
              hints={"ratios": (1.0, 1.0)}, shapes=((1, 5), (2, 5)), dtypes="i8", values="full"),
    ),
)
