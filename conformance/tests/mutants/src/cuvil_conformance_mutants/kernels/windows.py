"""Vendor-style sliding-window kernels: a direct conv2d (one GEMM per kernel tap), max/avg
pooling that walks each output window's bounds, adaptive average pooling. Each has its
plausible bugs behind a switch; ``bug=None`` is the correct kernel."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.graph import Node

F32 = np.float32


def _out_hw(node: Node) -> tuple[int, int]:
    shape = node.outputs[0].type.shape
    return int(shape[-2]), int(shape[-1])


def _fit(y: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """Crop or zero-extend the spatial dims to (oh, ow): what a kernel writing into a
    preallocated output of the right size does when its own size arithmetic is off."""
    out = np.zeros((*y.shape[:-2], oh, ow), dtype=y.dtype)
    h, w = min(oh, y.shape[-2]), min(ow, y.shape[-1])
    out[..., :h, :w] = y[..., :h, :w]
    return out


def conv2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, w, *rest = args
    a = node.attrs
    (sh, sw), (dh, dw), groups = a["stride"], a["dilation"], a["groups"]
    top, left, bottom, right = a["padding"]
    if bug == "symmetric_padding":  # assumes bottom == top and right == left
        bottom, right = top, left
    if bug == "dilation_h_only":
        dw = 1
    acc = np.float32 if x.dtype.kind == "f" else np.int64
    n, c, h, wid = x.shape
    o, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + top + bottom, wid + left + right), dtype=acc)
    xp[:, :, top : top + h, left : left + wid] = x
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((n, o, max(oh, 0), max(ow, 0)), dtype=acc)
    with np.errstate(all="ignore"):  # NaN/Inf inputs propagate silently
        _accumulate(y, xp, w, groups, (sh, sw), (dh, dw), bug)
    if rest:
        y += rest[0].astype(acc).reshape(1, o, 1, 1)
    y = _fit(y, *_out_hw(node))
    return [y.astype(x.dtype)]


def _accumulate(
    y: np.ndarray,
    xp: np.ndarray,
    w: np.ndarray,
    groups: int,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    bug: str | None,
) -> None:
    """y[:, group outputs] += one GEMM per kernel tap."""
    (sh, sw), (dh, dw) = stride, dilation
    c, o = xp.shape[1], w.shape[0]
    cg, kh, kw = w.shape[1:]
    og, oh, ow = o // groups, y.shape[2], y.shape[3]
    for g in range(groups):
        if bug == "groups_interleaved":  # channel k belongs to group k % groups
            cin, cout = np.arange(g, c, groups), np.arange(g, o, groups)
        else:
            cin, cout = np.arange(g * cg, (g + 1) * cg), np.arange(g * og, (g + 1) * og)
        for i in range(kh):
            for j in range(kw):
                tap = xp[:, cin, i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                         j * dw : j * dw + (ow - 1) * sw + 1 : sw]  # fmt: skip
                y[:, cout] += np.einsum("nchw,oc->nohw", tap, w[cout][:, :, i, j].astype(y.dtype))


def _window(
    node: Node,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, ...], tuple[int, int]]:
    a = node.attrs
    kernel = a["kernel"]
    stride = a["stride"] or kernel
    pads = a["padding"] * 2 if len(a["padding"]) == 2 else a["padding"]
    return kernel, stride, pads, a.get("dilation", (1, 1))


def _starts(
    out: int, size: int, k: int, s: int, lo: int, hi: int, d: int, bug: str | None
) -> list[int]:
    starts = []
    for p in range(out):
        st = p * s - lo
        extent = (k - 1) * d + 1
        if bug == "shift_last_window" and st + extent > size + hi:
            st = size + hi - extent  # pull the overhanging window back inside the padding
        starts.append(st)
    return starts


def max_pool2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    (kh, kw), (sh, sw), pads, (dh, dw) = _window(node)
    if bug == "no_dilation":
        dh = dw = 1
    h, w = x.shape[-2:]
    oh, ow = _out_hw(node)
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    rows = _starts(oh, h, kh, sh, pads[0], pads[2], dh, bug)
    cols = _starts(ow, w, kw, sw, pads[1], pads[3], dw, bug)
    y = np.full((*x.shape[:-2], oh, ow), lowest, dtype=x.dtype)
    reduce = np.fmax if bug == "nan_skip" else np.maximum
    for p, r0 in enumerate(rows):
        for q, c0 in enumerate(cols):
            for i in range(kh):
                for j in range(kw):
                    r, c = r0 + i * dh, c0 + j * dw
                    if 0 <= r < h and 0 <= c < w:
                        y[..., p, q] = reduce(y[..., p, q], x[..., r, c])
                    elif (
                        bug == "zero_pad"
                        and -pads[0] <= r < h + pads[2]
                        and -pads[1] <= c < w + pads[3]
                    ):
                        y[..., p, q] = reduce(y[..., p, q], x.dtype.type(0))
    return [y]


def avg_pool2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    a = node.attrs
    (kh, kw), (sh, sw), pads, _ = _window(node)
    h, w = x.shape[-2:]
    oh, ow = _out_hw(node)
    xf = x.astype(F32)
    y = np.zeros((*x.shape[:-2], oh, ow), dtype=F32)
    include = a["count_include_pad"] and bug != "ignore_count_include_pad"
    for p in range(oh):
        r0 = p * sh - pads[0]
        r1 = min(r0 + kh, h + pads[2])
        for q in range(ow):
            c0 = q * sw - pads[1]
            c1 = min(c0 + kw, w + pads[3])
            win = xf[..., max(r0, 0) : min(r1, h), max(c0, 0) : min(c1, w)]
            total = win.sum(axis=(-2, -1), dtype=F32)
            if a["divisor_override"] is not None:
                div = a["divisor_override"]
            elif include:
                # "kernel_divisor": the kernel's area, counting the overhang past the padding
                div = kh * kw if bug == "kernel_divisor" else (r1 - r0) * (c1 - c0)
            else:
                div = (min(r1, h) - max(r0, 0)) * (min(c1, w) - max(c0, 0))
            y[..., p, q] = total / F32(div)
    return [y.astype(x.dtype)]


def adaptive_avg_pool2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    oh, ow = node.attrs["output_size"]
    h, w = x.shape[-2:]

    def bounds(i: int, size: int, out: int) -> tuple[int, int]:
        start = (i * size) // out
        end = ((i + 1) * size) // out if bug == "floor_end" else -((-(i + 1) * size) // out)
        return start, max(end, start + 1)

    xf = x.astype(F32)
    y = np.zeros((*x.shape[:-2], oh, ow), dtype=F32)
    for p in range(oh):
        r0, r1 = bounds(p, h, oh)
        for q in range(ow):
            c0, c1 = bounds(q, w, ow)
            y[..., p, q] = xf[..., r0:r1, c0:c1].mean(axis=(-2, -1), dtype=F32)
    return [y.astype(x.dtype)]
