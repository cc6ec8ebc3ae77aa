"""2-D convolution (torch.nn.functional.conv2d), computed with float32 GEMMs.

The reference has to be fast enough to run ResNet-sized models, so it never loops over pixels.
It works on a zero-padded NHWC copy of the input and picks one of three schemes:

* shift and GEMM (the default): for each kernel tap (i, j) the input pixels that tap reads form a
  shifted view of the padded input; one ``[pixels, C] @ [C, O]`` GEMM per tap, accumulated. The
  padded image is split into ``stride_h * stride_w`` phases (space-to-depth), so that every tap of
  a strided conv is a stride-1 shift inside one phase, and each phase is stored flat with rows of a
  fixed width ``Wq``: a tap's view is then one contiguous slice and BLAS reads it without a copy.
  Outputs are computed for all ``Wq`` columns and the extra ``Wq - OW`` ones are dropped.
* im2col, for large kernels over few channels (the 7x7 stride-2 stem) and for small images with
  many channels (ResNet's last stages, where the weight is bigger than the gathered patches):
  gather all taps of each output pixel into one row and do a single GEMM with a long reduction.
* per-tap multiply-add, for depthwise convs (one input channel per group), vectorized over pixels.

Results are returned as NCHW views of NHWC buffers (strides differ from a fresh array; values do
not), which spares the next conv a transpose.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.grid import GridPoint, grid, point
from cuvil_ref.ops.layout_cache import cached_layout
from cuvil_ref.ops.linalg import accumulator
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import conv_out_size

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})

#: im2col is used when a tap has fewer input channels than this, or the kernel has more taps:
#: below it a per-tap GEMM is too thin to pay for re-reading the output on every tap.
IM2COL_MAX_CHANNELS = 16
IM2COL_MIN_TAPS = 10


def _check_pairs(
    op: str, attrs: FrozenDict, names: tuple[str, ...], padding_lengths: tuple[int, ...]
) -> None:
    for name in names:
        value = attrs[name]
        want = padding_lengths if name == "padding" else (2,)
        if len(value) not in want:
            raise ShapeError(
                f"op '{op}': {name} needs {' or '.join(map(str, want))} ints, got {value}"
            )
        low = 0 if name == "padding" else 1
        if any(v < low for v in value):
            raise ShapeError(f"op '{op}': {name} values must be >= {low}, got {value}")


def conv2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    """conv2d's output type: checks stride/padding/dilation, dtypes, ranks, groups and bias, and
    gives [N, O, OH, OW] in x's dtype (no layout). Also used by qconv2d on its int8 operands."""
    x, w = types[0], types[1]
    _check_pairs("conv2d", attrs, ("stride", "padding", "dilation"), (4,))
    if x.dtype != w.dtype or (len(types) == 3 and types[2].dtype != x.dtype):
        raise ShapeError("conv2d: x, weight and bias must share one dtype; insert a cast")
    if x.rank != 4 or w.rank != 4:
        raise ShapeError(
            f"conv2d takes x [N,C,H,W] and weight [O,C/groups,KH,KW], got "
            f"[{format_shape(x.shape)}] and [{format_shape(w.shape)}]"
        )
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    groups = attrs["groups"]
    if not all(isinstance(d, int) for d in w.shape):
        raise ShapeError(f"conv2d: weight shape must be static, got [{format_shape(w.shape)}]")
    if groups < 1 or c != cg * groups or o % groups != 0:
        raise ShapeError(
            f"conv2d: x has {c} channels, weight [{format_shape(w.shape)}] with groups={groups} "
            f"needs {cg * groups} and an output count divisible by groups"
        )
    if c == 0:  # torch returns an empty [N, 0, OH, OW] here, ignoring the bias: not mimicked
        raise ShapeError("conv2d with zero input channels is not supported")
    if len(types) == 3 and types[2].shape != (o,):
        raise ShapeError(
            f"conv2d: bias must have shape [{o}], got [{format_shape(types[2].shape)}]"
        )
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["stride"], attrs["padding"], attrs["dilation"]
    oh = conv_out_size(h, kh, sh, pt, pb, dh)
    ow = conv_out_size(wd, kw, sw, pl, pr, dw)
    return (TensorType((n, o, oh, ow), x.dtype),)


def phases(
    x: np.ndarray,
    pads: tuple[int, int],
    strides: tuple[int, int],
    acc: np.dtype,
    out_hw: tuple[int, int],
    span: tuple[int, int],
) -> tuple[np.ndarray, int]:
    """The padded NHWC input split into stride phases: [N, sh, sw, Hq * Wq, C], and Wq.

    ``x`` is NCHW; it is copied in dtype ``acc`` into a zero buffer padded by ``pads`` (top, left)
    and large enough for ``out_hw`` outputs of windows spanning ``span`` (dilated kernel size).
    Row ``r`` of phase (a, b) holds padded pixels ``(r // Wq * sh + a, r % Wq * sw + b)``."""
    n, c, h, w = x.shape
    (pt, pl), (sh, sw) = pads, strides
    hp = max(pt + h, (out_hw[0] - 1) * sh + span[0])
    wp = max(pl + w, (out_hw[1] - 1) * sw + span[1])
    hq, wq = -(-hp // sh) + 1, -(-wp // sw)  # one spare row: flat slices may run past the end
    buf = np.zeros((n, hq * sh, wq * sw, c), dtype=acc)
    buf[:, pt : pt + h, pl : pl + w, :] = x.transpose(0, 2, 3, 1)
    phased = buf.reshape(n, hq, sh, wq, sw, c).transpose(0, 2, 4, 1, 3, 5)
    return np.ascontiguousarray(phased).reshape(n, sh, sw, hq * wq, c), wq


def _taps(weight: np.ndarray, acc: np.dtype, groups: int) -> np.ndarray:
    """[KH, KW, G, Og, Cg] contiguous: taps[i, j] is the weight slice for kernel position (i, j);
    GEMMs read its transpose (a free view)."""
    o, cg, kh, kw = weight.shape
    t = weight.astype(acc, copy=False).reshape(groups, o // groups, cg, kh, kw)
    return np.ascontiguousarray(t.transpose(3, 4, 0, 1, 2))


def shift_gemm(
    x: np.ndarray,
    weight: np.ndarray,
    acc: np.dtype,
    groups: int,
    stride: tuple[int, int],
    padding: tuple[int, ...],
    dilation: tuple[int, int],
    oh: int,
    ow: int,
    sum_dtype: np.dtype | None = None,
) -> np.ndarray:
    """Shift-and-GEMM (or per-tap multiply-add when depthwise); returns [N, OH, OW, O].

    Each tap's GEMM runs in ``acc``; the taps are summed in ``sum_dtype`` (default ``acc``).
    qconv2d passes float32 and float64: every tap's reduction is then exact in float32 and the
    long total one exact in float64."""
    n = x.shape[0]
    o, cg, kh, kw = weight.shape
    og = o // groups
    (sh, sw), (dh, dw) = stride, dilation
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    flat, wq = phases(x, (padding[0], padding[1]), stride, acc, (oh, ow), span)
    m = oh * wq
    # Weights that are graph constants are re-laid out once, not on every call.
    taps = cached_layout(
        weight, ("conv_taps", str(np.dtype(acc)), groups), lambda w: _taps(w, acc, groups)
    )
    shape = (n, m, groups, og) if groups > 1 else (n, m, o)
    out = np.empty(shape, dtype=acc if sum_dtype is None else sum_dtype)
    tmp: np.ndarray | None = None
    for t, (i, j) in enumerate((i, j) for i in range(kh) for j in range(kw)):
        qi, a = divmod(i * dh, sh)
        qj, b = divmod(j * dw, sw)
        start = qi * wq + qj
        patch = flat[:, a, b, start : start + m, :]  # [N, M, C], contiguous per image
        if t == 0 and sum_dtype is None:
            dest = out  # the first tap writes the output directly
        else:
            tmp = np.empty(shape, dtype=acc) if tmp is None else tmp
            dest = tmp
        if groups == 1:
            np.matmul(patch, taps[i, j, 0].T, out=dest)
        elif cg == 1:  # depthwise: channel g feeds outputs g*og ... g*og + og - 1
            np.multiply(patch[..., None], taps[i, j, :, :, 0], out=dest)
        else:
            grouped = patch.reshape(n, m, groups, cg).transpose(0, 2, 1, 3)
            np.matmul(grouped, taps[i, j].transpose(0, 2, 1), out=dest.transpose(0, 2, 1, 3))
        if dest is not out:
            if t == 0:
                out[...] = dest
            else:
                out += dest
    return out.reshape(n, oh, wq, o)[:, :, :ow, :]


def im2col(
    x: np.ndarray,
    weight: np.ndarray,
    acc: np.dtype,
    groups: int,
    stride: tuple[int, int],
    padding: tuple[int, ...],
    dilation: tuple[int, int],
    oh: int,
    ow: int,
) -> np.ndarray:
    """One GEMM over [pixels, Cg*KH*KW] rows per group, in dtype ``acc``; returns [N, OH, OW, O].
    Arguments as :func:`shift_gemm`."""
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = stride, padding, dilation
    # Work in NHWC so each patch row is gathered as (KH, KW, Cg) runs of contiguous channels.
    xp = np.zeros((n, pt + h + pb, pl + w + pr, c), dtype=acc)
    xp[:, pt : pt + h, pl : pl + w, :] = x.transpose(0, 2, 3, 1)
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    win = sliding_window_view(xp, span, axis=(1, 2))[:, ::sh, ::sw, :, ::dh, ::dw]
    win = win[:, :oh, :ow].reshape(n, oh, ow, groups, cg, kh, kw)
    cols = win.transpose(0, 3, 1, 2, 5, 6, 4).reshape(n, groups, oh * ow, kh * kw * cg)  # copy
    w2 = cached_layout(
        weight, ("im2col", str(np.dtype(acc)), groups), lambda t: _im2col_weight(t, acc, groups)
    )
    out = np.matmul(cols, w2)  # [N, G, M, Og]
    return out.transpose(0, 2, 1, 3).reshape(n, oh, ow, o)


def _im2col_weight(weight: np.ndarray, acc: np.dtype, groups: int) -> np.ndarray:
    """[G, KH*KW*Cg, Og] contiguous, rows in the (KH, KW, Cg) order of im2col's patches."""
    o, cg, kh, kw = weight.shape
    t = weight.astype(acc, copy=False).reshape(groups, o // groups, cg, kh, kw)
    return np.ascontiguousarray(t.transpose(0, 3, 4, 2, 1)).reshape(
        groups, kh * kw * cg, o // groups
    )


def _conv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
    groups: int,
) -> np.ndarray:
    acc = accumulator(x.dtype)
    n, _, h, w = x.shape
    o, cg, kh, kw = weight.shape
    oh = int(conv_out_size(h, kh, stride[0], padding[0], padding[2], dilation[0]))
    ow = int(conv_out_size(w, kw, stride[1], padding[1], padding[3], dilation[1]))
    if n * o * oh * ow == 0:
        return np.zeros((n, o, oh, ow), dtype=x.dtype)
    depthwise = cg == 1 and groups > 1
    thin = cg < IM2COL_MAX_CHANNELS or kh * kw >= IM2COL_MIN_TAPS
    # Shift-and-GEMM copies the weight once; im2col copies the patches: copy the smaller.
    small_image = o // groups > n * oh * ow
    scheme = im2col if (thin or small_image) and not depthwise else shift_gemm
    with np.errstate(all="ignore"):  # NaN/Inf propagate silently, as in torch
        y = scheme(x, weight, acc, groups, stride, padding, dilation, oh, ow)
        if bias is not None:  # y is a fresh buffer: add in place
            y += bias.astype(acc, copy=False)
    return y.transpose(0, 3, 1, 2).astype(x.dtype, copy=False)


def conv2d_twin(torch: Any, x: Any, weight: Any, bias: Any = None, **attrs: Any) -> Any:
    """torch.nn.functional.conv2d, with the asymmetric padding applied by F.pad first."""
    top, left, bottom, right = attrs["padding"]
    x = torch.nn.functional.pad(x, (left, right, top, bottom))
    return torch.nn.functional.conv2d(
        x, weight, bias, stride=attrs["stride"], dilation=attrs["dilation"], groups=attrs["groups"]
    )


def _conv_point(
    rule: str,
    x: tuple[int, ...],
    o_k: tuple[int, int, int],
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
    bias: bool = True,
    **kw: Any,
) -> GridPoint:
    o, kh, kw_ = o_k
    shapes = (x, (o, x[1] // groups, kh, kw_)) + (((o,),) if bias else ())
    return point(rule, shapes=shapes, consts=(1, 2) if bias else (1,), stride=stride,
                 padding=padding, dilation=dilation, groups=groups, **kw)


#: conv2d's grid: every attribute class, on odd sizes. Groups are tested with several input and
#: output channels per group (a wrong channel-to-group mapping shows), not only depthwise.
CONV2D_GRID = grid(
    _conv_point("basic", (1, 3, 8, 8), (4, 3, 3), padding=(1, 1, 1, 1)),
    _conv_point("stride", (2, 4, 9, 7), (6, 3, 3), (2, 2), (1, 1, 1, 1)),
    _conv_point("stride", (1, 3, 11, 11), (5, 7, 7), (2, 2), (3, 3, 3, 3)),
    _conv_point("depthwise", (1, 6, 7, 7), (6, 3, 3), padding=(1, 1, 1, 1), groups=6),
    _conv_point("depthwise", (1, 12, 5, 5), (12, 3, 3), (2, 2), (1, 1, 1, 1), groups=12),
    _conv_point("depthwise", (1, 4, 6, 6), (8, 3, 3), padding=(1, 1, 1, 1), groups=4),
    _conv_point("groups", (1, 4, 9, 9), (6, 3, 3), padding=(1, 1, 1, 1), groups=2),
    _conv_point("groups", (1, 6, 5, 7), (9, 3, 3), (1, 2), (1, 1, 1, 1), groups=3),
    _conv_point("dilation", (1, 4, 9, 9), (4, 3, 3), padding=(2, 2, 2, 2), dilation=(2, 2),
                groups=2),
    _conv_point("dilation", (1, 2, 10, 9), (3, 3, 2), padding=(3, 1, 3, 0), dilation=(3, 1)),
    _conv_point("pointwise", (1, 8, 6, 6), (4, 1, 1)),
    _conv_point("asymmetric_padding", (1, 3, 5, 8), (2, 2, 3), (1, 2), (0, 1, 1, 0)),
    _conv_point("asymmetric_padding", (1, 2, 6, 6), (3, 3, 3), padding=(2, 0, 0, 1)),
    _conv_point("edge", (1, 2, 5, 5), (3, 3, 3), padding=(1, 1, 1, 1), bias=False,
                values=("edge", "normal")),
    _conv_point("f16", (1, 4, 6, 6), (4, 3, 3), bias=False, dtypes="f16"),
)


# tests/ops/test_conv.py reaches the two schemes by their former private names
_im2col, _shift_gemm = im2col, shift_gemm

register(
    OpDef(
        name="conv2d",
        inputs=("x", "weight", "bias?"),
        attrs=(
            Attr("stride", "ints", (1, 1), "(sh, sw)"),
            Attr("padding", "ints", (0, 0, 0, 0), "zero padding (top, left, bottom, right)"),
            Attr("dilation", "ints", (1, 1), "(dh, dw)"),
            Attr("groups", "int", 1, "input and output channels split into this many groups"),
        ),
        infer=conv2d_infer,
        reference=_conv2d,
        doc=(
            "y[n, o, p, q] = bias[o] + sum_{c, i, j} xpad[n, g*Cg + c, p*sh + i*dh, q*sw + j*dw] "
            "* weight[o, c, i, j], g = o // (O/groups), Cg = C/groups; x NCHW, weight OIHW, "
            "xpad = x zero-padded by (top, left, bottom, right). OH = (H + top + bottom - "
            "dh*(KH-1) - 1) // sh + 1. Floats accumulate in f32, integers in i64 then wrap."
        ),
        category="conv",
        dtypes=NUMERIC,
        torch_twin=conv2d_twin,
        conformance=CONV2D_GRID,
    )
)
