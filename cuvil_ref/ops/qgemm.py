"""Accumulating quantized int8 ops: qconv2d, qlinear and qmatmul.

Each computes the exact integer sum with float BLAS: operands are integers with
``|x - x_zp| <= 255`` and ``|w| <= 128``, and inference proves ``K * 255 * 128 < 2**31 < 2**53``
(``check_accumulator_bound``), so every partial sum is an exactly representable float64 integer
whatever order BLAS adds in; float32 is used where ``K * 255 * 128 < 2**24``. qconv2d reuses the
float conv's shift-and-GEMM and im2col schemes on ``x - x_zp``; zero padding of that difference
is padding ``x`` with ``x_zp``. Shared attribute conventions: :mod:`cuvil_ref.ops.quant_common`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops import qarith
from cuvil_ref.ops import quant_common as qc
from cuvil_ref.ops.conv import (
    IM2COL_MAX_CHANNELS,
    IM2COL_MIN_TAPS,
    conv2d_infer,
    im2col,
    shift_gemm,
)
from cuvil_ref.ops.grid import GridPoint, grid, point
from cuvil_ref.ops.linalg import matmul_shape
from cuvil_ref.ops.registry import Attr
from cuvil_ref.ops.shapes import conv_out_size

F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
#: Longest reduction of int8 products that float32 sums exactly: K * 255 * 128 < 2**24.
F32_EXACT_K = (2**24 - 1) // qarith.MAX_TERM_WEIGHT

CONV_ATTRS = (
    Attr("stride", "ints", (1, 1), "(sh, sw)"),
    Attr("padding", "ints", (0, 0, 0, 0), "(top, left, bottom, right); pads x with x_zp"),
    Attr("dilation", "ints", (1, 1), "(dh, dw)"),
    Attr("groups", "int", 1, "channel groups, as conv2d"),
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


def _bias_check(op: str, types: tuple[TensorType, ...], channels: Dim) -> None:
    if len(types) == 3:
        qc.want_dtype(op, types[2], DType.i32, "bias")
        if types[2].shape != (channels,):
            raise qc.fail(
                op, f"bias must have shape [{channels}], got [{format_shape(types[2].shape)}]"
            )


def _qconv2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, w = types[0], types[1]
    qc.want_dtype("qconv2d", x, DType.i8, "x")
    qc.want_dtype("qconv2d", w, DType.i8, "weight")
    conv_attrs = FrozenDict({k: attrs[k] for k in ("stride", "padding", "dilation", "groups")})
    (out,) = conv2d_infer((x, w), conv_attrs)
    o, cg, kh, kw = w.shape
    _bias_check("qconv2d", types, o)
    qc.check_out("qconv2d", attrs)
    qc.check_zp("qconv2d", "x_zp", attrs["x_zp"])
    qc.check_rescale("qconv2d", attrs, (1, o))
    qc.check_accumulator("qconv2d", int(cg) * int(kh) * int(kw))
    return (qc.qtype(out.shape, attrs, x.layout),)


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
    scheme = im2col if thin and not depthwise else shift_gemm
    geometry = (groups, stride, padding, dilation, oh, ow)
    if cg * kh * kw <= F32_EXACT_K:  # the whole reduction is exact in float32
        xd = _centered(x, attrs["x_zp"], F32)
        acc = scheme(xd, weight.astype(F32), F32, *geometry)
    elif scheme is shift_gemm and cg <= F32_EXACT_K:  # each tap is exact in float32
        xd = _centered(x, attrs["x_zp"], F32)
        acc = shift_gemm(xd, weight, F32, *geometry, sum_dtype=F64)  # taps summed in float64
    else:
        acc = scheme(_centered(x, attrs["x_zp"]), weight.astype(F64), F64, *geometry)
    acc = acc.astype(np.int64)  # [N, OH, OW, O], exact integers
    if bias is not None:
        acc += bias.astype(np.int64)
    return qc.requant(acc, attrs, -1).transpose(0, 3, 1, 2)


#: (x_zp, out_scale, out_zp, qmin, qmax): plain, extreme zero points, a relu bound (qmin =
#: out_zp) with a tiny out scale that saturates, a relu6-like upper bound.
QEPILOGUES = (
    ("zero_point", 3, 0.05, -5, -128, 127),
    ("zero_point", -128, 0.02, -128, -128, 127),
    ("saturation", 0, 0.002, 10, 10, 127),
    ("zero_point", 127, 0.5, 127, -128, 127),
    ("saturation", -7, 0.04, -20, -20, 80),
)


def _qgemm_point(
    rule: str, shapes: tuple[tuple[int, ...], ...], epi: int, x_scale: float, w_base: float,
    per_tensor: bool = False, **attrs: Any,
) -> GridPoint:
    """A qlinear/qconv2d point; per-channel weight scales ramp from ``w_base`` so every
    channel has its own multiplier (a per-tensor rescale gives other bits)."""
    _, x_zp, out_scale, out_zp, qmin, qmax = QEPILOGUES[epi % len(QEPILOGUES)]
    o = shapes[1][0]
    ratios = tuple(x_scale * (w_base * (1 + 0.3 * c)) / out_scale for c in range(o))
    return point(
        rule, x_zp=x_zp, out_scale=out_scale, out_zp=out_zp, qmin=qmin, qmax=qmax,
        hints={"ratios": ratios[:1] if per_tensor else ratios}, shapes=shapes,
        dtypes=("i8", "i8", "i32")[: len(shapes)], values=("full", "full", "normal")[: len(shapes)],
        consts=(1, 2)[: len(shapes) - 1], **attrs,
    )


def _qconv_point(
    rule: str, x: tuple[int, ...], o_k: tuple[int, int, int], epi: int,
    stride: tuple[int, int] = (1, 1), padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1), groups: int = 1, **kw: Any,
) -> GridPoint:
    o, kh, kwid = o_k
    return _qgemm_point(rule, (x, (o, x[1] // groups, kh, kwid), (o,)), epi, 0.05, 0.004,
                        stride=stride, padding=padding, dilation=dilation, groups=groups, **kw)


QCONV2D_GRID = grid(
    _qconv_point("zero_point", (1, 3, 8, 8), (4, 3, 3), 0, padding=(1, 1, 1, 1)),
    _qconv_point("stride", (1, 4, 9, 7), (6, 3, 3), 1, (2, 2), (1, 1, 1, 1)),
    _qconv_point("depthwise", (1, 6, 7, 7), (6, 3, 3), 2, padding=(1, 1, 1, 1), groups=6),
    _qconv_point("stride", (1, 3, 11, 11), (4, 7, 7), 3, (2, 2), (3, 3, 3, 3)),
    _qconv_point("pointwise", (1, 8, 5, 5), (5, 1, 1), 4),
    _qconv_point("dilation", (1, 4, 9, 9), (4, 3, 3), 0, padding=(2, 2, 2, 2), dilation=(2, 2),
                 groups=2),
    _qconv_point("groups", (1, 6, 6, 6), (9, 3, 3), 1, padding=(1, 0, 1, 2), groups=3),
    # padding holds x_zp (it adds 0 after centering): a far-from-zero x_zp shows a pack that
    # pads with the integer 0 instead
    _qconv_point("padding_zero_point", (1, 2, 6, 6), (3, 3, 3), 1, padding=(2, 2, 2, 2)),
    _qconv_point("per_tensor", (1, 3, 6, 6), (4, 3, 3), 0, padding=(1, 1, 1, 1),
                 per_tensor=True),
    _qconv_point("saturation", (1, 4, 6, 6), (4, 3, 3), 2, padding=(1, 1, 1, 1)),
)

QLINEAR_GRID = grid(
    *(
        _qgemm_point(rule, ((n, k), (o, k), (o,)), i, 0.02, 0.01)
        for i, (rule, n, k, o) in enumerate(
            (("zero_point", 2, 16, 5), ("zero_point", 3, 33, 7), ("saturation", 1, 64, 32),
             ("zero_point", 2, 16, 5), ("saturation", 3, 33, 7))
        )
    ),
    _qgemm_point("per_tensor", ((2, 16), (6, 16), (6,)), 0, 0.02, 0.01, per_tensor=True),
    _qgemm_point("no_bias", ((2, 9), (4, 9)), 0, 0.02, 0.01),
)

qc.register_qop(
    "qconv2d",
    ("x", "weight", "bias?"),
    _qconv2d_infer,
    _qconv2d,
    "acc[n, o, p, q] = bias[o] + sum_{c, i, j} (xpad - x_zp) * weight[o, c, i, j] in int32 "
    "(indices as conv2d; xpad is x padded with x_zp, so padding adds 0); out = clamp(out_zp + "
    "rescale(acc, M[o], shift[o]), qmin, qmax). x i8 NCHW, weight i8 OIHW (symmetric), bias "
    "i32; one multiplier for all channels or one per output channel.",
    (*CONV_ATTRS, qc.X_ZP, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    qc.I8_I32,
    family="qgemm",
    conformance=QCONV2D_GRID,
)


def _qlinear_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, w = types[0], types[1]
    qc.want_dtype("qlinear", x, DType.i8, "x")
    qc.want_dtype("qlinear", w, DType.i8, "weight")
    if w.rank != 2 or x.rank == 0 or x.shape[-1] != w.shape[1]:
        raise ShapeError(
            f"qlinear needs x [..., in] and weight [out, in], got "
            f"[{format_shape(x.shape)}] and [{format_shape(w.shape)}]"
        )
    o = qc.static("qlinear", w.shape[0], "the output features")
    _bias_check("qlinear", types, o)
    qc.check_out("qlinear", attrs)
    qc.check_zp("qlinear", "x_zp", attrs["x_zp"])
    qc.check_rescale("qlinear", attrs, (1, o))
    qc.check_accumulator("qlinear", qc.static("qlinear", w.shape[1], "the input features"))
    return (qc.qtype((*x.shape[:-1], o), attrs),)


def _qlinear(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, **attrs: Any
) -> np.ndarray:
    k = weight.shape[1]
    acc = _exact_matmul(_centered(x, attrs["x_zp"]), weight.T, k, qarith.MAX_TERM_WEIGHT)
    if bias is not None:
        acc += bias.astype(np.int64)
    return qc.requant(acc, attrs, -1)


qc.register_qop(
    "qlinear",
    ("x", "weight", "bias?"),
    _qlinear_infer,
    _qlinear,
    "acc[..., o] = bias[o] + sum_i (x[..., i] - x_zp) * weight[o, i] in int32; out = "
    "clamp(out_zp + rescale(acc, M[o], shift[o]), qmin, qmax). weight i8 [out, in], bias i32.",
    (qc.X_ZP, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    qc.I8_I32,
    family="qgemm",
    conformance=QLINEAR_GRID,
)


def _qmatmul_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    a, b = types
    qc.check_out("qmatmul", attrs)
    qc.check_zp("qmatmul", "a_zp", attrs["a_zp"])
    qc.check_zp("qmatmul", "b_zp", attrs["b_zp"])
    qc.check_rescale("qmatmul", attrs, (1,))
    shape = matmul_shape(a.shape, b.shape)
    qc.check_accumulator("qmatmul", qc.static("qmatmul", a.shape[-1], "the contraction dim"), True)
    return (qc.qtype(shape, attrs),)


def _qmatmul(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
    k = a.shape[-1]
    da, db = _centered(a, attrs["a_zp"]), _centered(b, attrs["b_zp"])
    acc = _exact_matmul(da, db, k, qarith.MAX_TERM_TWO_ACTIVATIONS)
    return qc.requant(acc, attrs, None)


qc.register_qop(
    "qmatmul",
    ("a", "b"),
    _qmatmul_infer,
    _qmatmul,
    "acc = sum_k (a[..., i, k] - a_zp) * (b[..., k, j] - b_zp) in int32 (torch.matmul shapes); "
    "out = clamp(out_zp + rescale(acc, M, shift), qmin, qmax), M, shift from s_a*s_b/s_out.",
    (*qc.ZP_AB, *qc.RESCALE_ATTRS, *qc.OUT_ATTRS),
    family="qbinary",
    conformance=grid(
        point("zero_point", a_zp=-3, b_zp=5, out_scale=0.3, out_zp=2,
              hints={"ratio": 0.02 * 0.03 / 0.3}, shapes=((3, 16), (16, 5)), dtypes="i8",
              values="full"),
        point("batched", a_zp=-3, b_zp=5, out_scale=0.3, out_zp=2,
              hints={"ratio": 0.02 * 0.03 / 0.3}, shapes=((2, 4, 9), (2, 9, 3)), dtypes="i8",
              values="full"),
    ),
)
