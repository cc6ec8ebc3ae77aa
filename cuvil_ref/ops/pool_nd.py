"""3-D pooling and max pooling with indices, over the last 2 or 3 dims (as in PyTorch).

``max_pool3d``, ``avg_pool3d`` and ``adaptive_avg_pool3d`` are the 3-d forms of the 2-d ops in
``pooling.py``; ``max_pool_with_indices`` is max pooling over 2 or 3 spatial dims that also
returns, for each output, the flat index of the chosen input element within its (unpadded)
spatial plane -- the second output of ``torch.nn.functional.max_pool2d(return_indices=True)``.
1-d pools reach these ops as 2-d pools over a height-1 image.

The references loop over kernel taps (each step one whole-tensor numpy operation on a strided
view of a padded copy); padding cells are never chosen by max pooling and count in an average
only with ``count_include_pad``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.pooling import adaptive_windows, trunc_div
from cuvil_ref.ops.registry import Attr, OpDef, register
from cuvil_ref.ops.shapes import conv_out_size

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})


def _spatial_rank(op: str, attrs: FrozenDict, x: TensorType, ranks: tuple[int, ...]) -> int:
    k = len(attrs["kernel"])
    if k not in ranks or x.rank not in (k + 1, k + 2):
        raise ShapeError(
            f"op '{op}' takes a kernel of {' or '.join(map(str, ranks))} sizes and x with that "
            f"many spatial dims after 1 or 2 leading dims, got kernel {attrs['kernel']} and "
            f"[{format_shape(x.shape)}]"
        )
    return k


def window(op: str, attrs: FrozenDict, k: int) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, dilation), each k ints, validated as PyTorch does."""
    kernel = tuple(attrs["kernel"])
    stride = tuple(attrs["stride"]) if attrs["stride"] is not None else kernel
    padding = tuple(attrs["padding"]) if attrs["padding"] is not None else (0,) * k
    dilation = attrs.get("dilation")
    dilation = tuple(dilation) if dilation is not None else (1,) * k
    for name, value, low in (
        ("kernel", kernel, 1),
        ("stride", stride, 1),
        ("padding", padding, 0),
        ("dilation", dilation, 1),
    ):
        if len(value) != k or min(value) < low:
            raise ShapeError(f"op '{op}': {name} must be {k} ints >= {low}, got {value}")
    if any(p > kk // 2 for p, kk in zip(padding, kernel)):
        raise ShapeError(f"op '{op}': padding {padding} must be at most half the kernel {kernel}")
    return kernel, stride, padding, dilation


def out_size(size: Sequence[Dim], attrs: FrozenDict, win: tuple[tuple[int, ...], ...]) -> list[Dim]:
    kernel, stride, padding, dilation = win
    return [
        conv_out_size(
            s, kernel[i], stride[i], padding[i], padding[i], dilation[i], attrs["ceil_mode"]
        )
        for i, s in enumerate(size)
    ]


def _window_infer(op: str, ranks: tuple[int, ...], indices: bool = False):  # noqa: ANN202
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        x = types[0]
        k = _spatial_rank(op, attrs, x, ranks)
        out = out_size(x.shape[-k:], attrs, window(op, attrs, k))
        shape = (*x.shape[:-k], *out)
        values = TensorType(shape, x.dtype)
        return (values, TensorType(shape, DType.i64)) if indices else (values,)

    return infer


def taps(
    x: np.ndarray, fill: float | int, attrs: dict, k: int, op: str
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[int]]:
    """For each kernel tap in row-major order: (a strided view [..., *out] of ``x`` padded with
    ``fill``, the flat input index [*out] of each cell or -1 for padding); and the output sizes.
    ceil_mode windows may run past the bottom padding: those cells are padding too."""
    kernel, stride, padding, dilation = win = window(op, FrozenDict(attrs), k)
    size = x.shape[-k:]
    out = [int(o) for o in out_size(size, FrozenDict(attrs), win)]
    need = [
        max((out[i] - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1, padding[i] + size[i])
        for i in range(k)
    ]
    inner = tuple(slice(padding[i], padding[i] + size[i]) for i in range(k))
    xp = np.full((*x.shape[:-k], *need), fill, dtype=x.dtype)
    xp[(..., *inner)] = x
    flat = np.full(need, -1, dtype=np.int64)
    flat[inner] = np.arange(int(np.prod(size)), dtype=np.int64).reshape(size)
    views = []
    for tap in itertools.product(*(range(kk) for kk in kernel)):
        sl = tuple(
            slice(t * dilation[i], t * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
            for i, t in enumerate(tap)
        )
        views.append((xp[(..., *sl)], flat[sl]))
    return views, out


def _lowest(dtype: np.dtype) -> int | float:
    return int(np.iinfo(dtype).min) if np.issubdtype(dtype, np.integer) else -np.inf


def max_with_indices(x: np.ndarray, attrs: dict, k: int, op: str) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's scan: the first maximum in row-major window order, or the last NaN."""
    views, out = taps(x, _lowest(x.dtype), attrs, k, op)
    shape = (*x.shape[:-k], *out)
    best = np.full(shape, _lowest(x.dtype), dtype=x.dtype)
    index = np.full(shape, -1, dtype=np.int64)
    for view, flat in views:
        valid = flat >= 0
        with np.errstate(invalid="ignore"):
            take = valid & ((index < 0) | (view > best) | np.isnan(view))
        best = np.where(take, view, best)
        index = np.where(take, flat, index)
    return best, index


def _max_pool_with_indices(x: np.ndarray, **attrs: object) -> tuple[np.ndarray, np.ndarray]:
    return max_with_indices(x, attrs, len(attrs["kernel"]), "max_pool_with_indices")  # type: ignore[arg-type]


def _max_pool3d(x: np.ndarray, **attrs: object) -> np.ndarray:
    views, _ = taps(x, _lowest(x.dtype), attrs, 3, "max_pool3d")
    out = views[0][0].copy()
    for view, _flat in views[1:]:
        np.maximum(out, view, out=out)  # NaN wins, as in PyTorch
    return out


def average(x: np.ndarray, attrs: dict, k: int, op: str) -> np.ndarray:
    """Window sums / divisor: f32 sums for floats (f64 for f64), i64 sums and a division
    rounding toward zero for integers."""
    integer = x.dtype.kind in "iu"
    acc = np.int64 if integer else (np.float64 if x.dtype == np.float64 else np.float32)
    views, out = taps(x.astype(acc, copy=False), 0, attrs, k, op)
    total = views[0][0].copy()
    for view, _flat in views[1:]:
        total += view
    kernel, stride, padding, _ = window(op, FrozenDict(attrs), k)
    size = x.shape[-k:]
    span = np.ones(out, dtype=np.int64)
    inside = np.ones(out, dtype=np.int64)
    for i in range(k):
        start = np.arange(out[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel[i], size[i] + padding[i])
        axis_shape = [1] * k
        axis_shape[i] = out[i]
        span = span * (end - start).reshape(axis_shape)
        inside = inside * (np.minimum(end, size[i]) - np.maximum(start, 0)).reshape(axis_shape)
    if attrs["divisor_override"] is not None:
        divisor: np.ndarray | int = int(attrs["divisor_override"])  # type: ignore[call-overload]
    else:
        divisor = span if attrs["count_include_pad"] else inside
    if integer:
        return trunc_div(total, divisor).astype(x.dtype)
    with np.errstate(all="ignore"):
        return (total / np.asarray(divisor, dtype=acc)).astype(x.dtype, copy=False)


def _avg_pool3d(x: np.ndarray, **attrs: object) -> np.ndarray:
    return average(x, attrs, 3, "avg_pool3d")


def _window_attrs(k: int | None) -> tuple[Attr, ...]:
    what = f"{k} ints" if k else "one int per spatial dim (2 or 3)"
    return (
        Attr("kernel", "ints", doc=what),
        Attr("stride", "ints?", None, f"{what}; None means the kernel size"),
        Attr(
            "padding",
            "ints" if k else "ints?",
            (0,) * k if k else None,
            f"{what}, on both sides, at most kernel/2" + ("" if k else "; None means zeros"),
        ),
    )


_MAX_ATTRS = (
    Attr("dilation", "ints", (1, 1, 1), "3 ints"),
    Attr("ceil_mode", "bool", False, "round the output size up (PyTorch rule)"),
)

register(
    OpDef(
        name="max_pool3d",
        conformance=grid(
            point("basic", shapes=((1, 2, 5, 6, 7),), kernel=(2, 2, 2)),
            point("padding", shapes=((2, 1, 6, 5, 5),), kernel=(3, 2, 3), stride=(2, 1, 2),
                  padding=(1, 1, 1)),
            point("ceil_mode", shapes=((1, 2, 5, 5, 4),), kernel=(2, 3, 2), stride=(2, 2, 2),
                  ceil_mode=True),
            point("edge", shapes=((1, 2, 4, 4, 4),), values="edge", kernel=(2, 2, 2)),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(*_window_attrs(3), *_MAX_ATTRS),
        infer=_window_infer("max_pool3d", (3,)),
        reference=_max_pool3d,
        doc=(
            "y[..., p, q, r] = max over the window's taps (i, j, l) of xpad[..., p*sd + i*dd, "
            "q*sh + j*dh, r*sw + l*dw]; padding never wins; NaN in a window gives NaN. Output "
            "sizes as conv3d, with ceil_mode rounding up while the last window starts inside "
            "the input or the front padding."
        ),
        category="pooling",
        dtypes=NUMERIC,
    )
)

register(
    OpDef(
        name="max_pool_with_indices",
        conformance=grid(
            point("padding", shapes=((1, 3, 7, 8),), kernel=(3, 3), stride=(2, 2),
                  padding=(1, 1)),
            point("ceil_mode", shapes=((2, 2, 6, 6),), kernel=(2, 2), dilation=(2, 1),
                  ceil_mode=True),
            point("basic", shapes=((1, 2, 4, 5, 6),), kernel=(2, 2, 3), stride=(1, 2, 2)),
            # ties (small ints) and NaN (edge values) decide which index is chosen
            point("tie", shapes=((1, 2, 6, 6),), dtypes="i32", values="small", kernel=(3, 3)),
            point("edge", shapes=((1, 2, 6, 6),), values="edge", kernel=(2, 2)),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(
            *_window_attrs(None),
            Attr("dilation", "ints?", None, "one int per spatial dim; None means ones"),
            Attr("ceil_mode", "bool", False, "round the output size up (PyTorch rule)"),
        ),
        infer=_window_infer("max_pool_with_indices", (2, 3), indices=True),
        reference=_max_pool_with_indices,
        doc=(
            "Max pooling over the last 2 or 3 dims (as max_pool2d / max_pool3d) with a second "
            "output: the i64 flat index (d*H*W + h*W + w) of the chosen element within its "
            "unpadded spatial plane. Windows are scanned in row-major order; the first maximum "
            "wins ties, and if the window holds NaN the last NaN is chosen (PyTorch's CPU rule)."
        ),
        category="pooling",
        dtypes=NUMERIC,
        num_outputs=2,
    )
)

register(
    OpDef(
        name="avg_pool3d",
        conformance=grid(
            point("basic", shapes=((1, 2, 5, 6, 7),), kernel=(2, 2, 2)),
            point("padding", shapes=((2, 1, 6, 5, 5),), kernel=(3, 2, 3), stride=(2, 1, 2),
                  padding=(1, 1, 1)),
            point("ceil_mode", shapes=((1, 2, 5, 5, 4),), kernel=(2, 3, 2), stride=(2, 2, 2),
                  ceil_mode=True),
            point("edge", shapes=((1, 2, 4, 4, 4),), values="edge", kernel=(2, 2, 2)),
            point("divisor_override", shapes=((1, 1, 4, 4, 4),), dtypes="i64", kernel=(2, 2, 2),
                  divisor_override=3, label="int"),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(
            *_window_attrs(3),
            Attr("ceil_mode", "bool", False, "round the output size up (PyTorch rule)"),
            Attr("count_include_pad", "bool", True, "padding cells count in the divisor"),
            Attr("divisor_override", "int?", None, "divide by this instead"),
        ),
        infer=_window_infer("avg_pool3d", (3,)),
        reference=_avg_pool3d,
        doc=(
            "y[..., p, q, r] = sum_{window} x / d; along each dim the window is [p*s - pad, "
            "min(p*s - pad + K, size + pad)); d = divisor_override, else the window's volume "
            "including padding (count_include_pad) or only inside x. Floats sum in f32 (f64 for "
            "f64); integers sum in i64 and divide rounding toward zero."
        ),
        category="pooling",
        dtypes=NUMERIC,
    )
)


def _adaptive3d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    size = attrs["output_size"]
    if x.rank not in (4, 5) or len(size) != 3 or min(size) < 1:
        raise ShapeError(
            "op 'adaptive_avg_pool3d' takes [N, C, D, H, W] or [C, D, H, W] and 3 positive "
            f"output sizes, got [{format_shape(x.shape)}] and {size}"
        )
    spatial = x.shape[-3:]
    if not all(isinstance(d, int) and d >= 1 for d in spatial):
        raise ShapeError(f"op 'adaptive_avg_pool3d' needs static, non-empty spatial dims, got {x}")
    return (TensorType((*x.shape[:-3], *size), x.dtype),)


def _adaptive_avg_pool3d(x: np.ndarray, *, output_size: tuple[int, int, int]) -> np.ndarray:
    acc = np.float64 if x.dtype == np.float64 else np.float32
    y = x.astype(acc, copy=False)
    for axis, out in zip((-3, -2, -1), output_size, strict=True):
        index, mask, length = adaptive_windows(y.shape[axis], out)
        moved = np.moveaxis(y, axis, -1)  # [..., size]
        rows = np.where(mask, moved[..., index], acc(0))  # [..., out, L]
        y = np.moveaxis(rows.sum(axis=-1) / length.astype(acc), -1, axis)
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="adaptive_avg_pool3d",
        conformance=grid(
            point("basic", shapes=((1, 2, 5, 7, 6),), output_size=(2, 3, 4)),
            point("global", shapes=((2, 3, 4, 4, 4),), output_size=(1, 1, 1)),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(Attr("output_size", "ints", doc="(OD, OH, OW)"),),
        infer=_adaptive3d_infer,
        reference=_adaptive_avg_pool3d,
        doc=(
            "y[..., i, j, l] = mean of x over d in [floor(i*D/OD), ceil((i+1)*D/OD)) and likewise "
            "h, w (PyTorch's windows); sums in f32 (f64 for f64), one axis at a time."
        ),
        category="pooling",
        dtypes=frozenset({DType.f64, DType.f32, DType.f16, DType.bf16}),
    )
)
