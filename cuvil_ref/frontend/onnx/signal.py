"""``DFT`` and ``STFT`` as matmuls with constant cosine and sine matrices (the length is static).

Complex tensors are ONNX's real representation: a trailing dim of 2 (real, imaginary), or 1 for
a real signal. ``DFT`` zero-pads or crops the signal to ``dft_length``; ``onesided`` keeps
frequencies ``0..L//2``; ``inverse`` divides by ``L``, and ``inverse`` with ``onesided`` is the
inverse real FFT (Hermitian input, real output with a trailing dim of 1). ``STFT`` cuts
``(length - frame_length) // frame_step + 1`` frames, multiplies each by the window and takes
its DFT.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import axis_of, static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _fit(cx: OnnxContext, x: Value, n: int) -> Value:
    """``x`` zero-padded or cropped to ``n`` along its last dim."""
    have = static_dims(cx, x, "DFT")[-1]
    if have > n:
        return cx.op("slice", [x], axis=-1, start=0, end=n)
    if have < n:
        return cx.op("pad", [x], pads=(0, n - have), value=0.0)
    return x


def dft_last(
    cx: OnnxContext, re: Value, im: Value | None, length: int, inverse: bool, onesided: bool
) -> tuple[Value, Value | None]:
    """The DFT of ``re + i im`` along the last dim: (real, imaginary) parts; the imaginary part
    is None for the inverse real FFT."""
    dt = re.type.dtype.numpy
    if inverse and onesided:
        bins = length // 2 + 1
        k = np.arange(bins)[:, None]
        t = np.arange(length)[None, :]
        weight = np.where((k == 0) | ((length % 2 == 0) & (k == length // 2)), 1.0, 2.0)
        angle = 2 * np.pi * k * t / length
        cr = cx.constant((weight * np.cos(angle) / length).astype(dt), "irfft_cos")
        y = cx.op("matmul", [_fit(cx, re, bins), cr])
        if im is not None:
            ci = cx.constant((-weight * np.sin(angle) / length).astype(dt), "irfft_sin")
            y = cx.op("add", [y, cx.op("matmul", [_fit(cx, im, bins), ci])])
        return y, None
    outs = length // 2 + 1 if onesided else length
    n = np.arange(length)[:, None]
    k = np.arange(outs)[None, :]
    angle = 2 * np.pi * n * k / length
    scale = 1.0 / length if inverse else 1.0
    sign = 1.0 if inverse else -1.0  # e^(-i angle) forward, e^(+i angle) inverse
    cos = cx.constant((np.cos(angle) * scale).astype(dt), "dft_cos")
    sin = cx.constant((sign * np.sin(angle) * scale).astype(dt), "dft_sin")
    re = _fit(cx, re, length)
    real = cx.op("matmul", [re, cos])
    imag = cx.op("matmul", [re, sin])
    if im is not None:
        im = _fit(cx, im, length)
        real = cx.op("sub", [real, cx.op("matmul", [im, sin])])
        imag = cx.op("add", [imag, cx.op("matmul", [im, cos])])
    return real, imag


def _pack(cx: OnnxContext, re: Value, im: Value | None) -> Value:
    parts = [cx.op("unsqueeze", [re], axis=re.type.rank)]
    if im is not None:
        parts.append(cx.op("unsqueeze", [im], axis=im.type.rank))
    return parts[0] if len(parts) == 1 else cx.op("concat", parts, axis=-1)


@onnx_op(TABLE, "DFT", 17, 20)
def dft(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    rank = x.type.rank
    if node.version >= 20:
        av = node.input(2)
        axis = int(cx.static(av, "axis").reshape(-1)[0]) if av is not None else -2
    else:
        axis = int(node.attr("axis", 1))
    axis = axis_of(axis, rank, cx)
    if axis == rank - 1:
        raise cx.error("the DFT axis cannot be the trailing (real, imaginary) dim")
    inverse, onesided = bool(int(node.attr("inverse", 0))), bool(int(node.attr("onesided", 0)))
    dims = static_dims(cx, x, "DFT")
    lv = node.input(1)
    if lv is not None:
        length = int(cx.static(lv, "dft_length").reshape(-1)[0])
    else:
        length = 2 * (dims[axis] - 1) if inverse and onesided else dims[axis]
    # move the signal axis last, split the complex dim
    perm = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    xt = cx.op("permute", [x], perm=tuple(perm))
    re = cx.op("squeeze", [cx.op("slice", [xt], axis=-1, start=0, end=1)], axes=(rank - 1,))
    im = None
    if dims[-1] == 2:
        im = cx.op("squeeze", [cx.op("slice", [xt], axis=-1, start=1, end=2)], axes=(rank - 1,))
    real, imag = dft_last(cx, re, im, length, inverse, onesided)
    y = _pack(cx, real, imag)
    back = [0] * rank
    for i, p in enumerate(perm):
        back[p] = i
    return cx.op("permute", [y], perm=tuple(back))


@onnx_op(TABLE, "STFT", 17)
def stft(cx: OnnxContext, node: OnnxNode) -> Value:
    signal = x_of(node)
    step = int(cx.static(node.inputs[1], "frame_step").reshape(-1)[0])
    window, lv = node.input(2), node.input(3)
    if lv is not None:
        frame = int(cx.static(lv, "frame_length").reshape(-1)[0])
    elif window is not None:
        frame = static_dims(cx, window, "STFT")[0]
    else:
        raise cx.error("STFT needs a window or a frame_length")
    batch, length, parts = static_dims(cx, signal, "STFT")
    frames = (length - frame) // step + 1
    index = (np.arange(frames)[:, None] * step + np.arange(frame)[None, :]).reshape(-1)
    rank2 = cx.op("permute", [signal], perm=(0, 2, 1))  # (batch, parts, length)
    cut = cx.op("index_select", [rank2, cx.constant(index.astype(np.int64), "frames")], axis=2)
    cut = cx.op("reshape", [cut], shape=(batch, parts, frames, frame))
    if window is not None:
        cut = cx.op("mul", [cut, window])
    re = cx.op("squeeze", [cx.op("slice", [cut], axis=1, start=0, end=1)], axes=(1,))
    im = None
    if parts == 2:
        im = cx.op("squeeze", [cx.op("slice", [cut], axis=1, start=1, end=2)], axes=(1,))
    onesided = bool(int(node.attr("onesided", 1)))
    real, imag = dft_last(cx, re, im, frame, False, onesided)
    return _pack(cx, real, imag)


__all__ = ["TABLE", "dft_last"]
