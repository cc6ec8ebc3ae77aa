"""Resampling an image at computed positions: ``upsample_bilinear2d`` (F.interpolate with
mode="bilinear") and ``grid_sample`` (F.grid_sample, ``aten.grid_sampler_2d``).

Both compute source coordinates in float32 with PyTorch's formulas, so the sampled positions
and weights are the ones torch's CPU kernels use; the weighted sums run in float32 (float64 for
f64 inputs). Nearest upsampling needs no op of its own: the frontend emits a constant-index
``index_select`` per axis.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register

FLOATS = frozenset({DType.f64, DType.f32, DType.f16, DType.bf16})


def _acc(dtype: np.dtype) -> type:
    return np.float64 if dtype == np.float64 else np.float32


def _fma(a: np.ndarray, b: np.float32 | np.ndarray, c: float | np.ndarray) -> np.ndarray:
    """float32 a*b + c rounded once, as the fused multiply-add PyTorch's compiled CPU kernels
    use (a float32 product is exact in float64, so float64 then float32 rounds once)."""
    return (a.astype(np.float64) * np.float64(b) + c).astype(np.float32)


def source_scale(size: int, out: int, align_corners: bool, scale: float | None) -> np.float32:
    """PyTorch's ``area_pixel_compute_scale``: input pixels per output pixel."""
    if align_corners:
        return np.float32((size - 1) / (out - 1)) if out > 1 else np.float32(0)
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(size) / np.float32(out)


def linear_taps(
    size: int, out: int, align_corners: bool, scale: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, w0, w1) per output position along one axis (``upsample_bilinear2d``)."""
    s = source_scale(size, out, align_corners, scale)
    dst = np.arange(out, dtype=np.float32)
    if align_corners:
        src = s * dst
    else:
        src = np.maximum(_fma(dst + np.float32(0.5), s, -0.5), np.float32(0))
    i0 = np.minimum(src.astype(np.int64), size - 1)
    i1 = np.minimum(i0 + 1, size - 1)
    w1 = (src - i0.astype(np.float32)).astype(np.float32)
    return i0, i1, np.float32(1) - w1, w1


def _upsample_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    size = attrs["size"]
    if x.rank != 4 or len(size) != 2 or min(size) < 1:
        raise ShapeError(
            "op 'upsample_bilinear2d' takes x [N, C, H, W] and 2 positive output sizes, got "
            f"[{format_shape(x.shape)}] and {size}"
        )
    if not all(isinstance(d, int) and d >= 1 for d in x.shape[2:]):
        raise ShapeError(f"op 'upsample_bilinear2d' needs static, non-empty H and W, got {x}")
    return (TensorType((*x.shape[:2], *size), x.dtype),)


def _upsample_bilinear2d(
    x: np.ndarray,
    *,
    size: tuple[int, int],
    align_corners: bool,
    scale_h: float | None,
    scale_w: float | None,
) -> np.ndarray:
    acc = _acc(x.dtype)
    h0, h1, a0, a1 = linear_taps(x.shape[2], size[0], align_corners, scale_h)
    w0, w1, b0, b1 = linear_taps(x.shape[3], size[1], align_corners, scale_w)
    xf = x.astype(acc, copy=False)
    a0, a1 = a0.astype(acc)[:, None], a1.astype(acc)[:, None]
    b0, b1 = b0.astype(acc), b1.astype(acc)
    with np.errstate(all="ignore"):
        top, bottom = xf[:, :, h0, :], xf[:, :, h1, :]
        y = a0 * (b0 * top[..., w0] + b1 * top[..., w1]) + a1 * (
            b0 * bottom[..., w0] + b1 * bottom[..., w1]
        )
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="upsample_bilinear2d",
        conformance=grid(
            point("basic", shapes=((1, 2, 4, 5),), size=(8, 10)),
            point("align_corners", shapes=((2, 3, 7, 6),), size=(5, 9), align_corners=True),
            point("scales", shapes=((1, 1, 6, 6),), size=(15, 9), scale_h=2.5, scale_w=1.5),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(
            Attr("size", "ints", doc="(OH, OW)"),
            Attr("align_corners", "bool", False, "corner pixels' centers map onto each other"),
            Attr("scale_h", "float?", None, "the user's scale factor (sets the source step)"),
            Attr("scale_w", "float?", None, "the user's scale factor (sets the source step)"),
        ),
        infer=_upsample_infer,
        reference=_upsample_bilinear2d,
        doc=(
            "y[n, c, p, q] = (1-a) ((1-b) x[h0, w0] + b x[h0, w1]) + a ((1-b) x[h1, w0] + "
            "b x[h1, w1]) with source row r = s*p (align_corners, s = (H-1)/(OH-1)) or "
            "max(0, s*(p + 1/2) - 1/2) (s = 1/scale_h if given, else H/OH), h0 = floor(r), "
            "h1 = min(h0 + 1, H - 1), a = r - h0 (likewise columns); float32 coordinates, as "
            "PyTorch's CPU kernel."
        ),
        category="resample",
        dtypes=FLOATS,
    )
)


# --- grid_sample ------------------------------------------------------------------------------

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _unnormalize(coord: np.ndarray, size: int, align_corners: bool) -> np.ndarray:
    """Grid value in [-1, 1] -> pixel coordinate, as torch's vectorized CPU grid sampler."""
    shifted = (coord + np.float32(1)).astype(np.float32)
    if align_corners:
        return shifted * (np.float32(size - 1) / np.float32(2))
    return _fma(shifted, np.float32(size) / np.float32(2), -0.5)


def _reflect(coord: np.ndarray, size: int, align_corners: bool) -> np.ndarray:
    """Mirror a coordinate into [0, size - 1] (align_corners) or [-0.5, size - 0.5]."""
    if align_corners:
        if size == 1:
            return np.zeros_like(coord)
        span = np.float32(2 * (size - 1))
        a = np.abs(coord)
    else:
        span = np.float32(2 * size)
        a = np.abs(coord + np.float32(0.5))
    flips = np.trunc(a / span)
    extra = _fma(-flips, span, a.astype(np.float64))
    out = np.minimum(extra, span - extra)
    return out if align_corners else out - np.float32(0.5)


def _padded(coord: np.ndarray, size: int, padding: str, align_corners: bool) -> np.ndarray:
    """PyTorch's ``compute_coordinates``: apply border / reflection padding to a coordinate.
    Clamping sends NaN to 0, as torch's vectorized CPU kernel does (``max(NaN, 0)`` is 0)."""
    if padding == "zeros":
        return coord
    if padding == "reflection":
        coord = _reflect(coord, size, align_corners)
    return np.minimum(np.where(coord > 0, coord, 0), size - 1).astype(coord.dtype)


def _gather(x: np.ndarray, iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
    """x[n, :, iy, ix] for integer coordinate arrays [N, OH, OW]; zero where out of bounds
    (NaN coordinates included). Returns [N, C, OH, OW]."""
    n, _, h, w = x.shape
    inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    yy = np.where(inside, iy, 0).astype(np.int64)
    xx = np.where(inside, ix, 0).astype(np.int64)
    batch = np.arange(n)[:, None, None]
    vals = x[batch, :, yy, xx]  # [N, OH, OW, C]
    vals = np.where(inside[..., None], vals, 0)
    return np.moveaxis(vals, -1, 1)


def _floor_int(c: np.ndarray) -> np.ndarray:
    """floor as float (NaN stays NaN, so it lands out of bounds)."""
    return np.floor(c)


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    a = np.float32(-0.75)

    def near(v: np.ndarray) -> np.ndarray:
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: np.ndarray) -> np.ndarray:
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _grid_sample(
    x: np.ndarray, grid: np.ndarray, *, mode: str, padding_mode: str, align_corners: bool
) -> np.ndarray:
    acc = _acc(x.dtype)
    xf = x.astype(acc, copy=False)
    h, w = x.shape[2:]
    gx = grid[..., 0].astype(np.float32)
    gy = grid[..., 1].astype(np.float32)
    with np.errstate(all="ignore"):
        ux, uy = _unnormalize(gx, w, align_corners), _unnormalize(gy, h, align_corners)
        if mode == "bicubic":
            fx, fy = _floor_int(ux), _floor_int(uy)
            cx, cy = _cubic(ux - fx), _cubic(uy - fy)
            out = np.zeros((x.shape[0], x.shape[1], *grid.shape[1:3]), dtype=acc)
            for i in range(4):
                row = np.zeros_like(out)
                py = _padded(fy - 1 + i, h, padding_mode, align_corners)
                for j in range(4):
                    px = _padded(fx - 1 + j, w, padding_mode, align_corners)
                    row += cx[j][:, None] * _gather(xf, py, px)
                out += cy[i][:, None] * row
            return out.astype(x.dtype, copy=False)
        ix = _padded(ux, w, padding_mode, align_corners)
        iy = _padded(uy, h, padding_mode, align_corners)
        if mode == "nearest":
            return _gather(xf, np.rint(iy), np.rint(ix)).astype(x.dtype, copy=False)
        x0, y0 = _floor_int(ix), _floor_int(iy)
        x1, y1 = x0 + 1, y0 + 1
        out = (
            ((x1 - ix) * (y1 - iy))[:, None] * _gather(xf, y0, x0)
            + ((ix - x0) * (y1 - iy))[:, None] * _gather(xf, y0, x1)
            + ((x1 - ix) * (iy - y0))[:, None] * _gather(xf, y1, x0)
            + ((ix - x0) * (iy - y0))[:, None] * _gather(xf, y1, x1)
        )
    return out.astype(x.dtype, copy=False)


def _grid_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, grid = types
    if x.rank != 4 or grid.rank != 4 or grid.shape[3] != 2:
        raise ShapeError(
            "op 'grid_sample' takes x [N, C, H, W] and grid [N, OH, OW, 2], got "
            f"[{format_shape(x.shape)}] and [{format_shape(grid.shape)}]"
        )
    if grid.dtype != x.dtype:
        raise ShapeError("op 'grid_sample': x and grid must share one dtype; insert a cast")
    if x.shape[0] != grid.shape[0]:
        raise ShapeError(f"op 'grid_sample': x and grid have different batch sizes ({x}, {grid})")
    if not all(isinstance(d, int) for d in x.shape[2:]):
        raise ShapeError(f"op 'grid_sample' needs static H and W, got {x}")
    return (TensorType((x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]), x.dtype),)


register(
    OpDef(
        name="grid_sample",
        conformance=grid(
            *(
                point(
                    mode,
                    shapes=((1, 2, 5, 6), (1, 3, 4, 2)),
                    values=("normal", "unit"),
                    mode=mode,
                    padding_mode=padding,
                    align_corners=i % 2 == 1,
                    label=padding,
                )
                for i, (mode, padding) in enumerate(
                    (m, p)
                    for m in ("bilinear", "nearest", "bicubic")
                    for p in ("zeros", "border", "reflection")
                )
            )
        ),  # fmt: skip
        inputs=("x", "grid"),
        attrs=(
            Attr("mode", "str", "bilinear", choices=MODES),
            Attr("padding_mode", "str", "zeros", choices=PADDINGS),
            Attr("align_corners", "bool", False, "grid -1/+1 are the corner pixels' centers"),
        ),
        infer=_grid_infer,
        reference=_grid_sample,
        doc=(
            "y[n, c, p, q] samples x[n, c] at grid[n, p, q] = (gx, gy) in [-1, 1]: pixel "
            "coordinate u = (g + 1)/2 * (W - 1) (align_corners) or ((g + 1) W - 1)/2, then "
            "border (clamp) or reflection padding; bilinear weighs the 4 neighbours, nearest "
            "rounds half to even, bicubic uses the 4x4 neighbours with A = -0.75 and pads each "
            "tap. Out-of-range taps read 0 with padding_mode='zeros' (torch.grid_sampler_2d)."
        ),
        category="resample",
        dtypes=FLOATS,
    )
)
