"""2-D pooling over the last two dims of [N, C, H, W] (or [C, H, W]) tensors, as in PyTorch.

Every reference loops over kernel taps only (a handful of iterations), each step a whole-tensor
numpy operation on a strided view. Adaptive pools gather each axis's (overlapping) windows with
an index array, padded to the longest window and masked.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import conv_out_size

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})


def _lowest(dtype: np.dtype) -> int | float:
    """The padding value of max pooling: -inf, or the smallest integer."""
    return int(np.iinfo(dtype).min) if np.issubdtype(dtype, np.integer) else -np.inf


def _spatial(op: str, t: TensorType) -> tuple[Dim, Dim]:
    if t.rank not in (3, 4):
        raise ShapeError(f"op '{op}' takes [N,C,H,W] or [C,H,W], got [{format_shape(t.shape)}]")
    return t.shape[-2], t.shape[-1]


def _window(
    op: str, attrs: FrozenDict
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int], tuple[int, int]]:
    """(kernel, stride, (top, left, bottom, right) padding, dilation), validated as torch does."""
    kernel = attrs["kernel"]
    stride = attrs["stride"] if attrs["stride"] is not None else kernel
    padding = attrs["padding"]
    dilation = attrs.get("dilation", (1, 1))
    for name, value in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
        if len(value) != 2 or min(value) < 1:
            raise ShapeError(f"op '{op}': {name} must be 2 positive ints, got {value}")
    if len(padding) not in (2, 4) or min(padding) < 0:
        raise ShapeError(f"op '{op}': padding must be 2 or 4 non-negative ints, got {padding}")
    pads = padding * 2 if len(padding) == 2 else padding
    extent = (
        kernel
        if op == "avg_pool2d"
        else tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True))
    )
    if any(p * 2 > extent[i % 2] for i, p in enumerate(pads)):
        raise ShapeError(f"op '{op}': padding {padding} must be at most half the kernel {kernel}")
    return kernel, stride, pads, dilation


def _out_hw(
    hw: tuple[Dim, Dim],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilation: tuple[int, int],
    ceil: bool,
) -> tuple[Dim, Dim]:
    return (
        conv_out_size(hw[0], kernel[0], stride[0], pads[0], pads[2], dilation[0], ceil),
        conv_out_size(hw[1], kernel[1], stride[1], pads[1], pads[3], dilation[1], ceil),
    )


def _pool_infer(op: str):  # noqa: ANN202 - returns an InferFn
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        kernel, stride, pads, dilation = _window(op, attrs)
        oh, ow = _out_hw(_spatial(op, types[0]), kernel, stride, pads, dilation, attrs["ceil_mode"])
        return (TensorType((*types[0].shape[:-2], oh, ow), types[0].dtype),)

    return infer


def _padded_taps(
    x: np.ndarray, fill: float, op: str, attrs: dict
) -> tuple[list[np.ndarray], int, int]:
    """Strided views of ``x`` padded with ``fill``, one per kernel tap, each [..., OH, OW]."""
    kernel, stride, pads, dilation = _window(op, attrs)
    h, w = x.shape[-2:]
    oh, ow = (int(d) for d in _out_hw((h, w), kernel, stride, pads, dilation, attrs["ceil_mode"]))
    need_h = (oh - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1
    need_w = (ow - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1
    # ceil_mode windows may run past the bottom/right padding: those cells are filled too.
    xp = np.full(
        (*x.shape[:-2], max(need_h, pads[0] + h), max(need_w, pads[1] + w)), fill, dtype=x.dtype
    )
    xp[..., pads[0] : pads[0] + h, pads[1] : pads[1] + w] = x
    taps = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r, c = i * dilation[0], j * dilation[1]
            taps.append(
                xp[
                    ...,
                    r : r + (oh - 1) * stride[0] + 1 : stride[0],
                    c : c + (ow - 1) * stride[1] + 1 : stride[1],
                ]
            )
    return taps, oh, ow


def _max_pool2d(x: np.ndarray, **attrs: object) -> np.ndarray:
    taps, _, _ = _padded_taps(x, _lowest(x.dtype), "max_pool2d", attrs)
    out = taps[0].copy()
    floating = np.issubdtype(out.dtype, np.floating)
    for t in taps[1:]:
        # PyTorch's rule: a later tap replaces the maximum only if greater, or NaN (NaN wins);
        # so a tie keeps the first tap (0.0 then -0.0 gives 0.0, where np.maximum gives -0.0).
        take = (t > out) | np.isnan(t) if floating else t > out
        out = np.where(take, t, out)
    return out


def pool2d_twin(name: str):  # noqa: ANN201 - a TorchTwinFn
    """torch.nn.functional.<name> with Cuvil's 4-value padding applied as an explicit F.pad."""

    def twin(torch, x, **attrs):  # noqa: ANN001, ANN202
        F = torch.nn.functional
        if name.startswith("adaptive"):
            return getattr(F, name)(x, attrs["output_size"])
        pads = attrs["padding"] * 2 if len(attrs["padding"]) == 2 else attrs["padding"]
        kw = {"kernel_size": attrs["kernel"], "stride": attrs["stride"] or attrs["kernel"]}
        kw["ceil_mode"] = attrs["ceil_mode"]
        if pads[:2] != pads[2:]:
            raise NotImplementedError("torch pools take symmetric padding only")
        kw["padding"] = pads[:2]
        if name == "max_pool2d":
            kw["dilation"] = attrs["dilation"]
        else:
            kw["count_include_pad"] = attrs["count_include_pad"]
            kw["divisor_override"] = attrs["divisor_override"]
        return getattr(F, name)(x, **kw)

    return twin


_WINDOW_ATTRS = (
    Attr("kernel", "ints", doc="(kh, kw)"),
    Attr("stride", "ints?", None, "(sh, sw); None means the kernel size"),
    Attr("padding", "ints", (0, 0), "(ph, pw) or (top, left, bottom, right), at most kernel/2"),
)

register(
    OpDef(
        name="max_pool2d",
        inputs=("x",),
        attrs=(
            *_WINDOW_ATTRS,
            Attr("dilation", "ints", (1, 1), "(dh, dw)"),
            Attr("ceil_mode", "bool", False, "round the output size up (PyTorch rule)"),
        ),
        infer=_pool_infer("max_pool2d"),
        reference=_max_pool2d,
        doc=(
            "y[..., p, q] = max_{i<KH, j<KW} xpad[..., p*sh + i*dh, q*sw + j*dw], xpad = x padded "
            "with -inf (integers: their minimum); NaN in a window gives NaN. OH as conv2d, with "
            "ceil_mode rounding up while the last window starts inside input or top padding."
        ),
        category="pooling",
        dtypes=NUMERIC,
        tolerance="exact",
        torch_twin=pool2d_twin("max_pool2d"),
        conformance=grid(
            point("basic", kernel=(2, 2), shapes=((1, 3, 8, 8),)),
            # all-negative inputs: padding must never win (it is -inf, not 0)
            point("padding", kernel=(3, 3), stride=(2, 2), padding=(1, 1), shapes=((2, 2, 9, 9),),
                  values="neg"),
            point("padding", kernel=(3, 3), stride=(1, 1), padding=(1, 1, 0, 0),
                  shapes=((1, 2, 5, 6),), values="neg", label="asymmetric"),
            # the last window overhangs the input (rows 6..8 of 8), then the bottom padding
            point("ceil_mode", kernel=(3, 3), stride=(2, 2), ceil_mode=True,
                  shapes=((1, 2, 8, 8),), values="neg"),
            point("ceil_mode", kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True,
                  shapes=((1, 3, 6, 6),), values="neg"),
            # ceil would add a window starting in the padding: PyTorch drops it
            point("ceil_mode", kernel=(2, 2), stride=(2, 2), padding=(1, 1), ceil_mode=True,
                  shapes=((1, 2, 5, 5),)),
            point("ceil_mode", kernel=(3, 2), stride=(2, 1), ceil_mode=True,
                  shapes=((1, 2, 7, 8),)),
            point("dilation", kernel=(3, 3), stride=(1, 1), dilation=(2, 2),
                  shapes=((1, 1, 9, 9),)),
            point("dilation", kernel=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(3, 2),
                  shapes=((1, 2, 10, 9),), values="neg"),
            point("nan_one_operand", kernel=(2, 2), shapes=((1, 2, 6, 6),), values="nan_one:7"),
            point("edge", kernel=(2, 2), shapes=((1, 2, 6, 6),), values="edge"),
            point("int", kernel=(3, 3), stride=(2, 2), padding=(1, 1), shapes=((1, 2, 7, 7),),
                  dtypes="i8", values="full"),
        ),
    )
)


def _avg_counts(
    size: int, out: int, k: int, s: int, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per output index: (window length clipped to the padded input, length inside the input)."""
    start = np.arange(out) * s - lo
    end = np.minimum(start + k, size + hi)
    inside = np.minimum(end, size) - np.maximum(start, 0)
    return (end - start).astype(np.float32), inside.astype(np.float32)


def trunc_div(total: np.ndarray, divisor: np.ndarray | int) -> np.ndarray:
    """Integer division rounding toward zero (C++'s ``/``, which PyTorch's integer pools use)."""
    d = np.asarray(divisor, dtype=np.int64)
    q = np.abs(total) // np.abs(d)
    return np.where((total < 0) != (d < 0), -q, q)


def _avg_pool2d(x: np.ndarray, **attrs: object) -> np.ndarray:
    integer = x.dtype.kind in "iu"
    xf = x.astype(np.int64 if integer else np.float32, copy=False)
    taps, oh, ow = _padded_taps(xf, 0, "avg_pool2d", attrs)
    total = taps[0].copy()
    for t in taps[1:]:
        total += t
    kernel, stride, pads, _ = _window("avg_pool2d", attrs)
    h, w = x.shape[-2:]
    span_h, in_h = _avg_counts(h, oh, kernel[0], stride[0], pads[0], pads[2])
    span_w, in_w = _avg_counts(w, ow, kernel[1], stride[1], pads[1], pads[3])
    if attrs["divisor_override"] is not None:
        divisor = np.float32(attrs["divisor_override"])
    elif attrs["count_include_pad"]:
        divisor = span_h[:, None] * span_w[None, :]
    else:
        divisor = in_h[:, None] * in_w[None, :]
    if integer:
        return trunc_div(total, np.asarray(divisor).astype(np.int64)).astype(x.dtype)
    return (total / divisor).astype(x.dtype, copy=False)


register(
    OpDef(
        name="avg_pool2d",
        inputs=("x",),
        attrs=(
            *_WINDOW_ATTRS,
            Attr("ceil_mode", "bool", False, "round the output size up (PyTorch rule)"),
            Attr("count_include_pad", "bool", True, "padding cells count in the divisor"),
            Attr("divisor_override", "int?", None, "divide by this instead"),
        ),
        infer=_pool_infer("avg_pool2d"),
        reference=_avg_pool2d,
        doc=(
            "y[..., p, q] = sum_{window} x / d. Window rows [p*sh - top, min(p*sh - top + KH, "
            "H + bottom)) (likewise columns); d = divisor_override, else its area including "
            "padding (count_include_pad) or only the area inside x. Floats sum in f32; "
            "integers sum in i64 and divide rounding toward zero (as PyTorch)."
        ),
        category="pooling",
        dtypes=NUMERIC,
        torch_twin=pool2d_twin("avg_pool2d"),
        conformance=grid(
            point("basic", kernel=(2, 2), shapes=((1, 3, 8, 8),)),
            point("count_include_pad", kernel=(3, 3), stride=(2, 2), padding=(1, 1),
                  count_include_pad=True, shapes=((1, 2, 9, 9),)),
            point("count_include_pad", kernel=(3, 3), stride=(2, 2), padding=(1, 1),
                  count_include_pad=False, shapes=((1, 2, 9, 9),)),
            point("count_include_pad", kernel=(3, 3), stride=(1, 1), padding=(1, 1, 0, 1),
                  count_include_pad=False, shapes=((1, 2, 5, 6),), label="asymmetric"),
            # the last window overhangs past the padding: its divisor counts the padded input
            # only (2 rows here, not the kernel's 3), with count_include_pad or without
            point("ceil_mode", kernel=(3, 3), stride=(2, 2), ceil_mode=True,
                  shapes=((1, 2, 8, 8),)),
            point("ceil_mode", kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True,
                  count_include_pad=True, shapes=((1, 2, 6, 6),)),
            point("ceil_mode", kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True,
                  count_include_pad=False, shapes=((1, 2, 7, 7),)),
            point("ceil_mode", kernel=(3, 2), stride=(2, 1), ceil_mode=True,
                  shapes=((1, 2, 7, 8),)),
            point("divisor_override", kernel=(2, 2), divisor_override=3, shapes=((1, 1, 6, 6),)),
            point("nan_one_operand", kernel=(2, 2), shapes=((1, 2, 6, 6),), values="nan_one:7"),
        ),
    )
)


def _adaptive_infer(op: str):  # noqa: ANN202 - returns an InferFn
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        h, w = _spatial(op, types[0])
        size = attrs["output_size"]
        if len(size) != 2 or min(size) < 1:
            raise ShapeError(f"op '{op}': output_size must be 2 positive ints, got {size}")
        if not (isinstance(h, int) and isinstance(w, int)) or min(h, w) < 1:
            raise ShapeError(
                f"op '{op}' needs static, non-empty spatial dims, got [{format_shape((h, w))}]"
            )
        return (TensorType((*types[0].shape[:-2], *size), types[0].dtype),)

    return infer


def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index [out, L] of window i = [floor(i*size/out), ceil((i+1)*size/out)), its mask, lengths."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    length = end - start
    idx = start[:, None] + np.arange(int(length.max()))[None, :]
    mask = idx < end[:, None]
    return np.minimum(idx, size - 1), mask, length


def _adaptive_reduce(
    x: np.ndarray, output_size: tuple[int, int], fill: float, reduce: np.ufunc
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ih, mh, lh = adaptive_windows(x.shape[-2], output_size[0])
    iw, mw, lw = adaptive_windows(x.shape[-1], output_size[1])
    rows = np.where(mh[:, :, None], x[..., ih, :], fill)  # [..., OH, Lh, W]
    y = reduce.reduce(rows, axis=-2)
    cols = np.where(mw, y[..., iw], fill)  # [..., OH, OW, Lw]
    return reduce.reduce(cols, axis=-1), lh, lw


def _adaptive_avg_pool2d(x: np.ndarray, *, output_size: tuple[int, int]) -> np.ndarray:
    xf = x.astype(np.float32, copy=False)
    total, lh, lw = _adaptive_reduce(xf, output_size, np.float32(0), np.add)
    area = (lh[:, None] * lw[None, :]).astype(np.float32)
    return (total / area).astype(x.dtype, copy=False)


def _adaptive_max_pool2d(x: np.ndarray, *, output_size: tuple[int, int]) -> np.ndarray:
    fill = np.array(_lowest(x.dtype)).astype(x.dtype)
    return _adaptive_reduce(x, output_size, fill, np.maximum)[0]


_ADAPTIVE_DOC = (
    "y[..., i, j] = {} of x[..., a, b] over a in [floor(i*H/OH), ceil((i+1)*H/OH)) and b in "
    "[floor(j*W/OW), ceil((j+1)*W/OW)) (PyTorch's windows; they overlap when H % OH != 0)"
)

_ADAPTIVE_GRID = grid(
    point("global", output_size=(1, 1), shapes=((1, 3, 7, 7),)),
    # H % OH != 0: windows overlap ([floor, ceil) bounds)
    point("overlap", output_size=(3, 4), shapes=((2, 2, 10, 7),)),
    point("overlap", output_size=(2, 3), shapes=((1, 1, 4, 9),)),
    point("identity", output_size=(5, 5), shapes=((1, 2, 5, 5),)),
)

register(
    OpDef(
        name="adaptive_avg_pool2d",
        inputs=("x",),
        attrs=(Attr("output_size", "ints", doc="(OH, OW)"),),
        infer=_adaptive_infer("adaptive_avg_pool2d"),
        reference=_adaptive_avg_pool2d,
        doc=_ADAPTIVE_DOC.format("the mean") + "; sums in f32.",
        category="pooling",
        dtypes=FLOAT_DTYPES,
        family="adaptive_pool2d",
        torch_twin=pool2d_twin("adaptive_avg_pool2d"),
        conformance=_ADAPTIVE_GRID,
    )
)

register(
    OpDef(
        name="adaptive_max_pool2d",
        inputs=("x",),
        attrs=(Attr("output_size", "ints", doc="(OH, OW)"),),
        infer=_adaptive_infer("adaptive_max_pool2d"),
        reference=_adaptive_max_pool2d,
        doc=_ADAPTIVE_DOC.format("the max") + "; NaN in a window gives NaN.",
        category="pooling",
        dtypes=NUMERIC,
        family="adaptive_pool2d",
        tolerance="exact",
        torch_twin=pool2d_twin("adaptive_max_pool2d"),
        conformance=grid(
            *_ADAPTIVE_GRID.grid,
            point("nan_one_operand", output_size=(2, 2), shapes=((1, 2, 6, 6),),
                  values="nan_one:7"),
        ),
    )
)
