"""Converters for interpolation and sampling: ``upsample_nearest2d``, ``upsample_bilinear2d``
(both overloads: ``.vec`` with ``output_size`` or ``scale_factors``, ``.default`` with the size
and optional per-axis scales) and ``grid_sampler_2d``.

Nearest upsampling is a pure gather: one constant-index ``index_select`` per axis, with the
source indices PyTorch computes (``min(floor(dst * scale), size - 1)`` in float32, ``scale`` the
inverse of the user's factor or ``size / out``). ``upsample_nearest2d`` is kept whole by the
decomposition table for that (torch would lower it to an ``arange`` chain and an ``index``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import rank, static_dim
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _sizes(
    op: str,
    x: Value,
    output_size: Sequence[int] | None,
    scales: Sequence[float | None],
) -> tuple[tuple[int, int], tuple[float | None, float | None]]:
    """(output size, per-axis scales passed on to the source-index formula)."""
    if rank(x) != 4:
        raise CaptureError(f"{op} takes an input [N, C, H, W], got {x.type}")
    hw = (static_dim(x, 2, op), static_dim(x, 3, op))
    if output_size is not None:
        out = tuple(int(s) for s in output_size)
    elif all(s is not None for s in scales):
        out = tuple(math.floor(d * float(s)) for d, s in zip(hw, scales))  # type: ignore[arg-type]
    else:
        raise CaptureError(f"{op} needs an output size or two scale factors")
    if len(out) != 2 or min(out) < 1 or min(hw) < 1:
        raise CaptureError(f"{op}: input {list(hw)} and output {list(out)} sizes must be > 0")
    return (out[0], out[1]), (scales[0], scales[1])


def _vec_or_default(
    args: tuple[Any, ...], kwargs: dict[str, Any], with_align: bool
) -> tuple[Any, bool, tuple[Any, Any]]:
    """Normalize both overloads to (output_size, align_corners, (scale_h, scale_w)):
    ``.vec(x, output_size, [align_corners,] scale_factors)`` and
    ``.default(x, output_size, [align_corners,] scales_h=None, scales_w=None)``."""
    names = ["output_size", *(["align_corners"] if with_align else [])]
    given = dict(zip(names, args))
    rest = list(args[len(names) :])
    given.update({k: v for k, v in kwargs.items() if k in names})
    if "scale_factors" in kwargs or (
        len(rest) == 1 and (rest[0] is None or isinstance(rest[0], (list, tuple)))
    ):
        factors = kwargs.get("scale_factors", rest[0] if rest else None)
        scales = tuple(factors) if factors is not None else (None, None)
    else:
        rest += [None] * (2 - len(rest))
        scales = (kwargs.get("scales_h", rest[0]), kwargs.get("scales_w", rest[1]))
    return given.get("output_size"), bool(given.get("align_corners", False)), scales


def nearest_indices(size: int, out: int, scale: float | None) -> np.ndarray:
    """PyTorch's ``nearest_idx`` for one axis."""
    dst = np.arange(out, dtype=np.int64)
    if out == size:
        return dst
    if out == 2 * size:
        return dst >> 1
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(size / out)
    src = np.floor(dst.astype(np.float32) * s).astype(np.int64)
    return np.minimum(src, size - 1)


def upsample_nearest2d(cx: Converter, x: Value, *args: Any, **kwargs: Any) -> Value:
    output_size, _, scales = _vec_or_default(args, kwargs, with_align=False)
    out, scales = _sizes("upsample_nearest2d", x, output_size, scales)
    y = x
    for axis, n, s in ((2, out[0], scales[0]), (3, out[1], scales[1])):
        size = static_dim(x, axis, "upsample_nearest2d")
        index = nearest_indices(size, n, s)
        if n == size and np.array_equal(index, np.arange(size)):
            continue
        y = cx.op("index_select", [y, cx.constant(index, "nearest_index")], axis=axis)
    return y


def upsample_bilinear2d(cx: Converter, x: Value, *args: Any, **kwargs: Any) -> Value:
    output_size, align, scales = _vec_or_default(args, kwargs, with_align=True)
    out, scales = _sizes("upsample_bilinear2d", x, output_size, scales)
    if not x.type.dtype.is_float:
        raise CaptureError(
            f"upsample_bilinear2d of a {x.type.dtype.value} image: torch interpolates integer "
            "images with CPU-specific fixed-point kernels (AVX2 or not), so there is no one "
            "result to reproduce; cast the image to float first (x.float())"
        )
    return cx.op(
        "upsample_bilinear2d",
        [x],
        size=out,
        align_corners=align,
        scale_h=None if scales[0] is None else float(scales[0]),
        scale_w=None if scales[1] is None else float(scales[1]),
    )


_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler_2d(
    cx: Converter,
    x: Value,
    grid: Value,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> Value:
    if int(interpolation_mode) not in _MODES or int(padding_mode) not in _PADDINGS:
        raise CaptureError(
            f"grid_sampler_2d with interpolation_mode={interpolation_mode}, "
            f"padding_mode={padding_mode} is not supported"
        )
    return cx.op(
        "grid_sample",
        [x, grid],
        mode=_MODES[int(interpolation_mode)],
        padding_mode=_PADDINGS[int(padding_mode)],
        align_corners=bool(align_corners),
    )


TABLE: dict[str, Conv] = {
    "aten::upsample_nearest2d": upsample_nearest2d,
    "aten::upsample_bilinear2d": upsample_bilinear2d,
    "aten::grid_sampler_2d": grid_sampler_2d,
}
