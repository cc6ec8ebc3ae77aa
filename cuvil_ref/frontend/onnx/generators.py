"""Converters for ONNX ops whose result depends on sizes and attributes only, or that move data
by indices known at import: the window functions, ``MelWeightMatrix``, ``AffineGrid`` (the
base grid is a constant, the transform a matmul), ``CenterCropPad``, ``ReverseSequence``.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _out_dtype(node: OnnxNode, default: DType = DType.f32) -> DType:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    code = node.attr("output_datatype")
    return default if code is None else dtype_of(int(code), "output_datatype")


def _window(formula):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        size = int(cx.static(node.inputs[0], "size").reshape(-1)[0])
        n = np.arange(size, dtype=np.float64)
        denom = size if int(node.attr("periodic", 1)) else size - 1
        w = formula(n, denom)
        return cx.constant(w.astype(_out_dtype(node).numpy), node.op_type.lower())

    return convert


onnx_op(TABLE, "HannWindow", 17)(
    _window(lambda n, m: np.sin(np.pi * n / m) ** 2)  # sin^2(pi n / N)
)
onnx_op(TABLE, "HammingWindow", 17)(
    _window(lambda n, m: 25 / 46 - (21 / 46) * np.cos(2 * np.pi * n / m))
)
onnx_op(TABLE, "BlackmanWindow", 17)(
    _window(lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / m) + 0.08 * np.cos(4 * np.pi * n / m))
)


@onnx_op(TABLE, "MelWeightMatrix", 17)
def mel_weight_matrix(cx: OnnxContext, node: OnnxNode) -> Value:
    """Triangular filters over ``num_mel_bins + 2`` points evenly spaced on the mel scale
    (``mel = 2595 log10(1 + hz / 700)``) between the edge frequencies, each mapped to the DFT bin
    ``floor((dft_length + 1) * hz / sample_rate)``; filter i rises from point i to point i+1
    and falls to point i+2. The result is ``(dft_length // 2 + 1, num_mel_bins)``."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    bins, dft, rate, low, high = (
        cx.static(v, n).reshape(-1)[0] for v, n in zip(node.inputs, names)
    )
    bins, dft = int(bins), int(dft)

    def mel(hz: float) -> float:
        return 2595 * np.log10(1 + hz / 700)

    lo, hi = mel(float(low)), mel(float(high))
    points = lo + np.arange(bins + 2) * (hi - lo) / (bins + 2)
    hz = 700 * (np.power(10, points / 2595) - 1)
    edges = (((dft + 1) * hz) // float(rate)).astype(int)
    w = np.zeros((dft // 2 + 1, bins))
    for i in range(bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            w[center, i] = 1
        else:
            for j in range(left, center + 1):
                w[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            w[j, i] = (right - j) / (right - center)
    return cx.constant(w.astype(_out_dtype(node).numpy), "mel_weights")


def _base_grid(sizes: tuple[int, ...], align: bool) -> np.ndarray:
    """Normalized coordinates in [-1, 1] per output position, last axis (x, y[, z], 1)."""
    axes = []
    for n in sizes:
        if align:
            axes.append(np.linspace(-1, 1, n) if n > 1 else np.array([-1.0]))
        else:
            axes.append((np.arange(n) * 2 + 1) / n - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W order
    coords = [m for m in reversed(mesh)]  # x varies along W: (x, y[, z])
    return np.stack([*coords, np.ones(sizes)], axis=-1)


@onnx_op(TABLE, "AffineGrid", 20)
def affine_grid(cx: OnnxContext, node: OnnxNode) -> Value:
    """``grid[n, ..., :] = theta[n] @ (x, y[, z], 1)`` over the normalized base grid."""
    theta = x_of(node)
    size = cx.ints(node.inputs[1], "size")
    n, rows, cols = static_dims(cx, theta, "AffineGrid")
    spatial = tuple(size[2:])
    base = _base_grid(spatial, bool(int(node.attr("align_corners", 0))))
    flat = base.reshape(-1, cols).T.astype(theta.type.dtype.numpy)  # (cols, P)
    grid = cx.op("matmul", [theta, cx.constant(flat, "base_grid")])  # (N, rows, P)
    grid = cx.op("permute", [grid], perm=(0, 2, 1))
    return cx.op("reshape", [grid], shape=(n, *spatial, rows))


@onnx_op(TABLE, "CenterCropPad", 18)
def center_crop_pad(cx: OnnxContext, node: OnnxNode) -> Value:
    """Crop or zero-pad each listed axis to the target size, keeping the center (an odd
    difference puts the extra element at the end)."""
    x = x_of(node)
    rank = x.type.rank
    target = cx.ints(node.inputs[1], "shape")
    axes = [axis_of(a, rank, cx) for a in node.attr("axes", range(rank))]
    dims = static_dims(cx, x, "CenterCropPad")
    for a, want in zip(axes, target):
        have = dims[a]
        if want < have:
            start = (have - want) // 2
            x = cx.op("slice", [x], axis=a, start=start, end=start + want)
        elif want > have:
            before = (want - have) // 2
            pads = [0, 0] * (rank - 1 - a) + [before, want - have - before]
            x = cx.op("pad", [x], pads=tuple(pads), value=0.0)
    return x


@onnx_op(TABLE, "ReverseSequence", 10)
def reverse_sequence(cx: OnnxContext, node: OnnxNode) -> Value:
    """Reverse the first ``sequence_lens[b]`` steps of each batch entry ``b``; the rest stay."""
    x, lens = node.inputs[0], node.inputs[1]
    assert x is not None and lens is not None
    batch_axis = int(node.attr("batch_axis", 1))
    time_axis = int(node.attr("time_axis", 0))
    dims = static_dims(cx, x, "ReverseSequence")
    steps = dims[time_axis]
    shape = [1] * len(dims)
    shape[time_axis] = steps
    t = cx.constant(np.arange(steps, dtype=np.int64).reshape(shape), "steps")
    bshape = [1] * len(dims)
    bshape[batch_axis] = dims[batch_axis]
    n = cx.op("reshape", [cx.cast(lens, DType.i64)], shape=tuple(bshape))
    inside = cx.op("lt", [t, n])
    flipped = cx.op("sub", [cx.op("sub", [n, cx.scalar(1, DType.i64)]), t])
    index = cx.op("where", [inside, flipped, t])
    index = cx.op("expand", [index], shape=tuple(dims))
    return cx.op("gather", [x, index], axis=time_axis)


__all__ = ["TABLE"]


@onnx_op(TABLE, "Col2Im", 18)
def col2im(cx: OnnxContext, node: OnnxNode) -> Value:
    """Sum the sliding blocks (columns) back into the image: one matmul per (N, C) with the
    constant 0/1 matrix that sends block offset b of column l to its pixel."""
    x = x_of(node)
    image = cx.ints(node.inputs[1], "image_shape")
    block = cx.ints(node.inputs[2], "block_shape")
    k = len(image)
    dil = [int(v) for v in node.attr("dilations", [1] * k)]
    strides = [int(v) for v in node.attr("strides", [1] * k)]
    pads = [int(v) for v in node.attr("pads", [0] * (2 * k))]
    n, cb, cols = static_dims(cx, x, "Col2Im")
    blocks = int(np.prod(block))
    c = cb // blocks
    counts = [
        (image[i] + pads[i] + pads[k + i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
        for i in range(k)
    ]
    if int(np.prod(counts)) != cols:
        raise cx.error(f"{cols} columns do not tile an image of {image} with these blocks")
    scatter = np.zeros((blocks * cols, int(np.prod(image))), dtype=x.type.dtype.numpy)
    for b, offset in enumerate(np.ndindex(*block)):
        for col, where in enumerate(np.ndindex(*counts)):
            pixel = [where[i] * strides[i] - pads[i] + offset[i] * dil[i] for i in range(k)]
            if all(0 <= p < s for p, s in zip(pixel, image)):
                scatter[b * cols + col, int(np.ravel_multi_index(pixel, image))] = 1
    y = cx.op("reshape", [x], shape=(n, c, blocks * cols))
    y = cx.op("matmul", [y, cx.constant(scatter, "col2im")])
    return cx.op("reshape", [y], shape=(n, c, *image))


#: MaxUnpool's one-hot placement is quadratic in the plane size; past this it is refused.
UNPOOL_LIMIT = 1 << 24


@onnx_op(TABLE, "MaxUnpool", 9, 11, 22)
def max_unpool(cx: OnnxContext, node: OnnxNode) -> Value:
    """Place each value at its (flat, whole-tensor) index in a zero tensor of the unpooled
    shape ``(in - 1) * stride - pads + kernel``; a larger ``output_shape`` pads at the end."""
    x, index = node.inputs[0], node.inputs[1]
    assert x is not None and index is not None
    dims = static_dims(cx, x, "MaxUnpool")
    k = [int(v) for v in node.attr("kernel_shape")]
    sp = len(k)
    strides = [int(v) for v in node.attr("strides", [1] * sp)]
    pads = [int(v) for v in node.attr("pads", [0] * (2 * sp))]
    out = (
        *dims[:2],
        *[(dims[2 + i] - 1) * strides[i] - pads[i] - pads[sp + i] + k[i] for i in range(sp)],
    )
    planes = dims[0] * dims[1]
    plane_in, plane_out = int(np.prod(dims[2:])), int(np.prod(out[2:]))
    if planes * plane_in * plane_out > UNPOOL_LIMIT:
        raise cx.error(f"MaxUnpool to {list(out)} is too large for Cuvil's placement")
    offsets = (np.arange(planes, dtype=np.int64) * plane_out).reshape(planes, 1, 1)
    local = cx.op(
        "sub",
        [
            cx.op("reshape", [cx.cast(index, DType.i64)], shape=(planes, plane_in, 1)),
            cx.constant(offsets, "offsets"),
        ],
    )
    positions = cx.constant(np.arange(plane_out, dtype=np.int64).reshape(1, 1, -1), "positions")
    hot = cx.op("eq", [local, positions])  # (planes, plane_in, plane_out)
    values = cx.op("reshape", [x], shape=(planes, plane_in, 1))
    placed = cx.op("where", [hot, values, cx.scalar(0, x.type.dtype)])
    y = cx.op("reshape", [cx.op("sum", [placed], axes=(1,))], shape=out)
    if node.input(2) is not None:  # indices address the default shape; a larger one pads at the end
        want = cx.ints(node.input(2), "output_shape")
        extra = [w - o for w, o in zip(want, out)]
        if any(e < 0 for e in extra):
            raise cx.error(f"output_shape {want} is smaller than the unpooled shape {list(out)}")
        torch_pads: list[int] = []
        for e in reversed(extra):
            torch_pads += [0, e]
        y = cx.op("pad", [y], pads=tuple(torch_pads), value=0.0)
    return y
