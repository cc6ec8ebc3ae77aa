"""Vendor-style int8 kernels written from ``docs/semantics.md``: quantize, dequantize, the
fixed-point rescale and the ops built on it. Plausible bugs sit behind switches -- the
rounding rules other libraries use (half away from zero as gemmlowp/TFLite, half to even as a
float ``rint``), missing saturation, per-tensor parameters where the op is per channel, a
zero point forgotten in padding. ``bug=None`` is the correct kernel."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.graph import Node

I64 = np.int64


def _along(v: tuple, ndim: int, axis: int | None, dtype: type) -> np.ndarray:
    arr = np.asarray(v, dtype=dtype)
    if axis is None:
        return arr[0]
    shape = [1] * ndim
    shape[axis % ndim] = arr.size
    return arr.reshape(shape)


def rescale(
    acc: np.ndarray, m: np.ndarray, shift: np.ndarray, rounding: str = "half_up"
) -> np.ndarray:
    """round(acc * m / 2**shift): the spec rounds halves toward +inf."""
    acc, m, shift = (np.asarray(v, dtype=I64) for v in (acc, m, shift))
    prod = acc * m
    if rounding == "half_up":
        return (prod + (I64(1) << (shift - 1))) >> shift
    if rounding == "truncate":
        return prod >> shift
    if rounding == "half_away":  # gemmlowp RoundingDivideByPOT
        mag = (np.abs(prod) + (I64(1) << (shift - 1))) >> shift
        return np.where(prod < 0, -mag, mag)
    # half to even
    floor = prod >> shift
    rem = prod - (floor << shift)
    half = I64(1) << (shift - 1)
    up = (rem > half) | ((rem == half) & (floor % 2 == 1))
    return floor + up.astype(I64)


def _rounding(bug: str | None) -> str:
    return {"half_even": "half_even", "half_away": "half_away", "truncate": "truncate"}.get(
        bug or "", "half_up"
    )


def _finish(node: Node, acc: np.ndarray, m: object, s: object, bug: str | None) -> np.ndarray:
    a = node.attrs
    v = a["out_zp"] + rescale(acc, m, s, _rounding(bug))
    lo, hi = (-128, 127) if bug == "default_bounds" else (a["qmin"], a["qmax"])
    return np.clip(v, lo, hi).astype(np.int8)


def quantize(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    a = node.attrs
    axis = None if bug == "per_tensor" else a["axis"]
    xf = x.astype(np.float32)
    s = _along(a["scale"], x.ndim, axis, np.float32)
    zp = _along(a["zero_point"], x.ndim, axis, np.int64)
    with np.errstate(all="ignore"):
        t = np.divide(xf, s, dtype=np.float32)
        if bug == "half_away":  # C's roundf
            r = np.sign(t) * np.floor(np.abs(t) + np.float32(0.5))
        elif bug == "half_up":
            r = np.floor(t + np.float32(0.5))
        else:
            r = np.rint(t)
        r = np.where(np.isnan(r), 0, r)
        if bug == "wrap":  # no saturation: the int32 result is narrowed
            q = np.clip(r, -(2.0**31), 2.0**31 - 1).astype(np.int64) + zp
            return [q.astype(np.int32).astype(np.int8)]
        q = np.clip(r + zp, -128, 127)
    return [q.astype(np.int8)]


def dequantize(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (q,) = args
    a = node.attrs
    s = _along(a["scale"], q.ndim, a["axis"], np.float32)
    zp_axis = None if bug == "per_tensor_zp" else a["axis"]
    zp = _along(a["zero_point"], q.ndim, zp_axis, np.int64)
    return [((q.astype(np.int64) - zp).astype(np.float32) * s).astype(np.float32)]


def requantize(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    a = node.attrs
    acc = args[0].astype(I64) - a["x_zp"]
    return [_finish(node, acc, a["multiplier"][0], a["shift"][0], bug)]


def qadd(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    a = node.attrs
    da, db = args[0].astype(I64) - a["a_zp"], args[1].astype(I64) - a["b_zp"]
    (ma, mb), s = a["multiplier"], a["shift"][0]
    if bug == "double_rounding":  # each operand rescaled (and rounded) on its own, then added
        v = a["out_zp"] + rescale(da, ma, s) + rescale(db, mb, s)
        return [np.clip(v, a["qmin"], a["qmax"]).astype(np.int8)]
    acc = da * ma + db * mb
    v = a["out_zp"] + rescale(acc, 1, s, _rounding(bug))
    return [np.clip(v, a["qmin"], a["qmax"]).astype(np.int8)]


def qmatmul(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    a = node.attrs
    b_zp = 0 if bug == "ignore_b_zp" else a["b_zp"]
    acc = np.matmul(args[0].astype(I64) - a["a_zp"], args[1].astype(I64) - b_zp)
    return [_finish(node, acc, a["multiplier"][0], a["shift"][0], bug)]


def _per_channel(
    node: Node, o: int, bug: str | None, ndim: int, axis: int
) -> tuple[np.ndarray, ...]:
    m, s = node.attrs["multiplier"], node.attrs["shift"]
    if bug == "per_tensor" or len(m) == 1:  # the first channel's multiplier for every channel
        m, s = (m[0],) * o, (s[0],) * o
    shape = [1] * ndim
    shape[axis] = o
    return np.asarray(m, I64).reshape(shape), np.asarray(s, I64).reshape(shape)


def qlinear(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, w, *bias = args
    acc = (x.astype(I64) - node.attrs["x_zp"]) @ w.astype(I64).T
    if bias:
        acc = acc + bias[0].astype(I64)
    m, s = _per_channel(node, w.shape[0], bug, acc.ndim, acc.ndim - 1)
    return [_finish(node, acc, m, s, bug)]


def qconv2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, w, *bias = args
    a = node.attrs
    (sh, sw), (dh, dw), groups = a["stride"], a["dilation"], a["groups"]
    top, left, bottom, right = a["padding"]
    n, c, h, wid = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    xp = np.zeros((n, c, h + top + bottom, wid + left + right), dtype=I64)
    if bug == "pad_zero":  # raw x padded with the integer 0, centered afterwards
        xp[:, :, top : top + h, left : left + wid] = x
        xp -= a["x_zp"]
    else:  # centered first: padding adds exactly 0
        xp[:, :, top : top + h, left : left + wid] = x.astype(I64) - a["x_zp"]
    oh, ow = (int(d) for d in node.outputs[0].type.shape[2:])
    acc = np.zeros((n, o, oh, ow), dtype=I64)
    for g in range(groups):
        cin, cout = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for i in range(kh):
            for j in range(kw):
                tap = xp[:, cin, i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                         j * dw : j * dw + (ow - 1) * sw + 1 : sw]  # fmt: skip
                acc[:, cout] += np.einsum("nchw,oc->nohw", tap, w[cout, :, i, j].astype(I64))
    if bias:
        acc += bias[0].astype(I64).reshape(1, o, 1, 1)
    m, s = _per_channel(node, o, bug, 4, 1)
    return [_finish(node, acc, m, s, bug)]


def qmax_pool2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    a = node.attrs
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["stride"], a["dilation"]
    top, left, bottom, right = a["padding"]
    h, w = x.shape[2:]
    oh, ow = (int(d) for d in node.outputs[0].type.shape[2:])
    y = np.full((*x.shape[:2], oh, ow), -128, dtype=np.int16)
    for p in range(oh):
        for q in range(ow):
            for i in range(kh):
                for j in range(kw):
                    r, col = p * sh - top + i * dh, q * sw - left + j * dw
                    if 0 <= r < h and 0 <= col < w:
                        y[..., p, q] = np.maximum(y[..., p, q], x[..., r, col])
                    elif bug == "zero_pad" and -top <= r < h + bottom and -left <= col < w + right:
                        y[..., p, q] = np.maximum(y[..., p, q], 0)
    return [y.astype(np.int8)]


def qavg_pool2d(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    a = node.attrs
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    top, left, bottom, right = a["padding"]
    h, w = x.shape[2:]
    oh, ow = (int(d) for d in node.outputs[0].type.shape[2:])
    d = x.astype(I64) - a["x_zp"]
    out = np.zeros((*x.shape[:2], oh, ow), dtype=np.int8)
    m, s = np.asarray(a["multiplier"], I64), np.asarray(a["shift"], I64)
    for p in range(oh):
        r0 = p * sh - top
        r1 = min(r0 + kh, h + bottom)
        for q in range(ow):
            c0 = q * sw - left
            c1 = min(c0 + kw, w + right)
            acc = d[..., max(r0, 0) : min(r1, h), max(c0, 0) : min(c1, w)].sum(axis=(-2, -1))
            if a["count_include_pad"]:
                cnt = (r1 - r0) * (c1 - c0)
            else:
                cnt = (min(r1, h) - max(r0, 0)) * (min(c1, w) - max(c0, 0))
            out[..., p, q] = _finish(node, acc, m[cnt - 1], s[cnt - 1], bug)
    return [out]


def qconcat(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    a = node.attrs
    parts = []
    for x, zp, m, s in zip(args, a["x_zp"], a["multiplier"], a["shift"]):
        if bug == "no_requant":  # shifts zero points only, as if the scales were equal
            parts.append(np.clip(x.astype(I64) - zp + a["out_zp"], -128, 127).astype(np.int8))
        else:
            parts.append(_finish(node, x.astype(I64) - zp, m, s, None))
    return [np.concatenate(parts, axis=a["axis"])]
