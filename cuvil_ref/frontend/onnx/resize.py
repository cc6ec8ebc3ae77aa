"""``Resize`` (and the older ``Upsample``) with ONNX's exact sampling rules.

Resize is separable: each resized axis is a linear map of that axis, fixed by the sizes alone.
So the importer computes, per axis and in float64, which input positions each output position
reads and with what weights -- ONNX's coordinate transformation modes (``half_pixel``,
``half_pixel_symmetric``, ``pytorch_half_pixel``, ``align_corners``, ``asymmetric``,
``tf_crop_and_resize``), its nearest rounding modes, the linear and cubic kernels (with
``cubic_coeff_a``, ``exclude_outside`` and ``antialias``) and edge clamping -- and emits plain IR:
``index_select`` for ``nearest`` (exact in every dtype), a matmul with the constant weight
matrix for ``linear``/``cubic``.

Per output position ``i`` along an axis of input size ``n``, output size ``m`` and scale ``s``:
``x = transform(i)``; ``r = x - floor(x)`` (``r = 1`` when ``x`` is an integer, so the left
pixel is preferred); the kernel gives ``k`` coefficients for the ``k`` input positions nearest
``x``, which clamp to ``[0, n - 1]`` (edge padding) or, with ``exclude_outside``, drop and
renormalize.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}

TRANSFORMS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coords(mode: str, m: int, n: int, scale: float, roi: tuple[float, float]) -> np.ndarray:
    """Input coordinate of each of the ``m`` output positions (float64).

    ``align_corners`` and ``tf_crop_and_resize`` divide by the unrounded output length
    ``scale * n``, as ONNX's reference implementation and its node tests do; ONNX Runtime divides
    by the integer length ``m`` instead, so the two differ when ``scales`` are given and
    ``scale * n`` is not whole (with ``sizes`` they agree)."""
    i = np.arange(m, dtype=np.float64)
    out = scale * n
    if mode == "align_corners":
        return np.zeros(m) if out == 1 else i * (n - 1) / (out - 1)
    if mode == "asymmetric":
        return i / scale
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(m, (hi - lo) * (n - 1) / 2) if out == 1 else i * (hi - lo) * (n - 1) / (out - 1)
        return x + lo * (n - 1)
    if mode == "pytorch_half_pixel":
        return np.zeros(m) if out <= 1 else (i + 0.5) / scale - 0.5  # spec: 0 for one cell
    if mode == "half_pixel_symmetric":
        offset = n / 2 * (1 - m / out)
        return offset + (i + 0.5) / scale - 0.5
    return (i + 0.5) / scale - 0.5  # half_pixel


def _nearest(nearest_mode: str) -> Callable[[float, float], np.ndarray]:
    def coeffs(r: float, scale: float) -> np.ndarray:
        if r == 1.0:
            return np.array([0.0, 1.0])
        right = {
            "round_prefer_floor": r > 0.5,
            "round_prefer_ceil": r >= 0.5,
            "floor": False,
            "ceil": True,
        }[nearest_mode]
        return np.array([0.0, 1.0]) if right else np.array([1.0, 0.0])

    return coeffs


def _linear(antialias: bool) -> Callable[[float, float], np.ndarray]:
    def coeffs(r: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([1 - r, r])
        s = min(scale, 1.0)
        start = int(math.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start) - r) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()

    return coeffs


def _cubic(a: float, antialias: bool) -> Callable[[float, float], np.ndarray]:
    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x <= 1, near, np.where(x < 2, far, 0.0))

    def coeffs(r: float, scale: float) -> np.ndarray:
        if not antialias:
            return kernel(np.array([r + 1, r, 1 - r, 2 - r]))
        s = min(scale, 1.0)
        start = int(math.floor(-2 / s) + 1)
        c = kernel(s * (np.arange(start, 2 - start) - r))
        return c / c.sum()

    return coeffs


def axis_weights(
    n: int,
    m: int,
    scale: float,
    transform: str,
    coeffs: Callable[[float, float], np.ndarray],
    exclude_outside: bool,
    roi: tuple[float, float],
    extrapolation: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(W, extrapolated)``: output = W @ input along the axis (W is m x n, float64); rows of
    ``extrapolated`` (tf_crop_and_resize outside the input) take ``extrapolation_value``."""
    w = np.zeros((m, n))
    x = source_coords(transform, m, n, scale, roi)
    outside = (x < 0) | (x > n - 1) if transform == "tf_crop_and_resize" else None
    for i, xi in enumerate(x):
        if outside is not None and outside[i]:
            continue
        base = math.floor(xi)
        r = 1.0 if xi == base else xi - base
        if r == 1.0:
            base -= 1  # prefer the left pixel: the window ends at x itself
        c = np.array(coeffs(r, scale), dtype=np.float64)
        k = len(c)
        idx = base - k // 2 + 1 + np.arange(k)
        if exclude_outside:
            c = np.where((idx >= 0) & (idx < n), c, 0.0)
            total = c.sum()
            c = c / total if total else c
        for j, cj in zip(np.clip(idx, 0, n - 1), c):
            w[i, j] += cj
    return w, outside


def _apply(
    cx: OnnxContext,
    x: Value,
    axis: int,
    w: np.ndarray,
    outside: np.ndarray | None,
    extrapolation: float,
    nearest: bool,
) -> Value:
    rank = x.type.rank
    if nearest:
        index = np.argmax(w, axis=1)
        y = cx.op(
            "index_select", [x, cx.constant(index.astype(np.int64), "resize_index")], axis=axis
        )
    else:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inverse = tuple(int(p) for p in np.argsort(perm))
        xt = cx.op("permute", [x], perm=tuple(perm)) if axis != rank - 1 else x
        wt = cx.constant(np.ascontiguousarray(w.T).astype(x.type.dtype.numpy), "resize_weights")
        y = cx.op("matmul", [xt, wt])
        y = cx.op("permute", [y], perm=inverse) if axis != rank - 1 else y
    if outside is not None and outside.any():
        shape = [1] * rank
        shape[axis] = len(outside)
        mask = cx.constant(outside.reshape(shape), "extrapolated")
        y = cx.op("where", [mask, cx.scalar(extrapolation, x.type.dtype), y])
    return y


def resize_axes(
    cx: OnnxContext,
    node: OnnxNode,
    x: Value,
    scales: list[float] | None,
    sizes: list[int] | None,
    axes: list[int],
    roi: list[float] | None,
) -> Value:
    dims = static_dims(cx, x, "Resize")
    rank = len(dims)
    mode = str(node.attr("mode", "nearest"))
    transform = str(node.attr("coordinate_transformation_mode", "half_pixel"))
    if node.version < 11:
        transform = "asymmetric"
    if transform not in TRANSFORMS:
        raise cx.error(f"coordinate_transformation_mode {transform!r} is not one of {TRANSFORMS}")
    nearest_mode = str(node.attr("nearest_mode", "round_prefer_floor"))
    if node.version < 11:
        nearest_mode = "floor"  # Resize-10 and Upsample: asymmetric, floor
    antialias = bool(int(node.attr("antialias", 0)))
    if mode == "nearest":
        if nearest_mode not in NEAREST:
            raise cx.error(f"nearest_mode {nearest_mode!r} is not one of {NEAREST}")
        coeffs = _nearest(nearest_mode)
    elif mode == "linear":
        coeffs = _linear(antialias)
    elif mode == "cubic":
        coeffs = _cubic(float(node.attr("cubic_coeff_a", -0.75)), antialias)
    else:
        raise cx.error(f"mode {mode!r} is not nearest, linear or cubic")
    if mode != "nearest" and not x.type.dtype.is_float:
        raise cx.error(f"{mode} resizing of a {x.type.dtype.value} tensor is not supported")
    full_scale = [1.0] * rank
    out = list(dims)
    if sizes is not None:
        per = {a: sizes[i] / dims[a] for i, a in enumerate(axes)}
        policy = str(node.attr("keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":
            common = min(per.values()) if policy == "not_larger" else max(per.values())
            per = dict.fromkeys(axes, common)
            for a in axes:
                out[a] = int(common * dims[a] + 0.5)
        else:
            for i, a in enumerate(axes):
                out[a] = sizes[i]
        for a in axes:
            full_scale[a] = per[a]
    elif scales is not None:
        for i, a in enumerate(axes):
            full_scale[a] = scales[i]
            out[a] = int(scales[i] * dims[a])
    extrapolation = float(node.attr("extrapolation_value", 0.0))
    exclude = bool(int(node.attr("exclude_outside", 0)))
    for i, a in enumerate(axes):
        lo_hi = (roi[i], roi[len(axes) + i]) if roi else (0.0, 1.0)
        if out[a] == dims[a] and math.isclose(full_scale[a], 1.0) and lo_hi == (0.0, 1.0):
            continue
        w, outside = axis_weights(
            dims[a], out[a], full_scale[a], transform, coeffs, exclude, lo_hi, extrapolation
        )
        x = _apply(cx, x, a, w, outside, extrapolation, mode == "nearest")
    return x


@onnx_op(TABLE, "Resize", 10, 11, 13, 18, 19)
def resize(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    rank = x.type.rank
    if node.version < 11:
        scales = [float(s) for s in cx.static(node.inputs[1], "scales").reshape(-1)]
        return resize_axes(cx, node, x, scales, None, list(range(rank)), None)
    roi_v, scales_v, sizes_v = node.input(1), node.input(2), node.input(3)
    axes = [axis_of(int(a), rank, cx) for a in node.attr("axes", range(rank))]
    roi = None
    if roi_v is not None and cx.static(roi_v, "roi").size:
        roi = [float(v) for v in cx.static(roi_v, "roi").reshape(-1)]
        if len(roi) == 2 * rank and len(axes) != rank:
            roi = [roi[a] for a in axes] + [roi[rank + a] for a in axes]
    scales = None
    if scales_v is not None and cx.static(scales_v, "scales").size:
        scales = [float(s) for s in cx.static(scales_v, "scales").reshape(-1)]
    sizes = None
    if sizes_v is not None and cx.static(sizes_v, "sizes").size:
        sizes = [int(s) for s in cx.static(sizes_v, "sizes").reshape(-1)]
    if (scales is None) == (sizes is None):
        raise cx.error("give exactly one of scales and sizes")
    return resize_axes(cx, node, x, scales, sizes, axes, roi)


@onnx_op(TABLE, "Upsample", 7, 9)
def upsample(cx: OnnxContext, node: OnnxNode) -> Value:
    """Deprecated ``Resize``: asymmetric coordinates, nearest rounds down."""
    x = x_of(node)
    scales = (
        node.attr("scales")
        if node.version < 9
        else [float(s) for s in cx.static(node.inputs[1], "scales").reshape(-1)]
    )
    view = OnnxNode(
        node.op_type,
        node.name,
        node.inputs,
        {"mode": node.attr("mode", "nearest")},
        1,
        10,
        node.opset,
    )
    return resize_axes(
        cx, view, x, [float(s) for s in scales], None, list(range(x.type.rank)), None
    )


__all__ = ["TABLE", "axis_weights", "source_coords"]
