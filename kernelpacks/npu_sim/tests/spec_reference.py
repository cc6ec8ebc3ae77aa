"""Numpy reference for each lowered layer, written from the pinned quant spec (independent of the
pack and of cuvil_ref, so the two can be cross-checked)."""

from __future__ import annotations

import math

import numpy as np


def quantize_multiplier(ratio: float) -> tuple[int, int]:
    if ratio == 0:
        return 0, 1
    if not math.isfinite(ratio) or ratio < 0:
        raise ValueError(ratio)
    m, e = math.frexp(ratio)
    mult = round(m * 2**31)
    if mult == 2**31:
        mult //= 2
        e += 1
    shift = 31 - e
    if shift > 62:
        mult >>= shift - 62
        shift = 62
    if shift < 1:
        raise ValueError(ratio)
    return mult, shift


def shared_shift(ratios: list[float]) -> tuple[list[int], int]:
    e = max(math.frexp(r)[1] for r in ratios if r)
    shift = min(30 - e, 62)
    return [round(r * 2**shift) for r in ratios], shift


def requant(
    acc: np.ndarray, mult: np.ndarray, shift: np.ndarray, out_zp: int, qmin: int, qmax: int
) -> np.ndarray:
    acc = acc.astype(np.int64)
    mult, shift = np.asarray(mult, np.int64), np.asarray(shift, np.int64)
    scaled = (acc * mult + (np.int64(1) << (shift - 1))) >> shift
    return np.clip(out_zp + scaled, qmin, qmax).astype(np.int8)


def _windows(
    x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int
) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] gather of an already padded input."""
    rows = (np.arange(oh) * sh)[:, None] + (np.arange(kh) * dh)[None, :]
    cols = (np.arange(ow) * sw)[:, None] + (np.arange(kw) * dw)[None, :]
    return x[:, :, rows[:, None, :, None], cols[None, :, None, :]]


def conv_acc(
    x: np.ndarray,
    w: np.ndarray,
    x_zp: int,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
) -> np.ndarray:
    n, c, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x.astype(np.int64) - x_zp, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    win = _windows(xp, kh, kw, sh, sw, dh, dw, oh, ow)
    og = cout // groups
    outs = [
        np.einsum(
            "ncyxij,ocij->noyx",
            win[:, g * cg : (g + 1) * cg],
            w[g * og : (g + 1) * og].astype(np.int64),
        )
        for g in range(groups)
    ]
    return np.concatenate(outs, axis=1)


def qconv2d(
    x,
    w,
    bias,
    mult,
    shift,
    x_zp,
    out_zp,
    qmin=-128,
    qmax=127,
    stride=(1, 1),
    padding=(0, 0),
    dilation=(1, 1),
    groups=1,
):
    acc = conv_acc(x, w, x_zp, stride, padding, dilation, groups)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)[None, :, None, None]
    m = np.broadcast_to(np.asarray(mult, np.int64), (w.shape[0],))[None, :, None, None]
    s = np.broadcast_to(np.asarray(shift, np.int64), (w.shape[0],))[None, :, None, None]
    return requant(acc, m, s, out_zp, qmin, qmax)


def qlinear(x, w, bias, mult, shift, x_zp, out_zp, qmin=-128, qmax=127):
    acc = (x.astype(np.int64) - x_zp) @ w.astype(np.int64).T
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return requant(acc, mult, shift, out_zp, qmin, qmax)


def qmatmul(a, b, mult, shift, a_zp, b_zp, out_zp, qmin=-128, qmax=127):
    acc = (a.astype(np.int64) - a_zp) @ (b.astype(np.int64) - b_zp)
    return requant(acc, mult, shift, out_zp, qmin, qmax)


def qadd(a, b, m_a, m_b, shift, a_zp, b_zp, out_zp, qmin=-128, qmax=127):
    acc = (a.astype(np.int64) - a_zp) * m_a + (b.astype(np.int64) - b_zp) * m_b
    return np.clip(out_zp + ((acc + (1 << (shift - 1))) >> shift), qmin, qmax).astype(np.int8)


def qmax_pool2d(x, k, s, p, d=(1, 1)):
    xp = np.pad(
        x.astype(np.int64), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=-(10**9)
    )
    oh = (x.shape[2] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (x.shape[3] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return _windows(xp, *k, *s, *d, oh, ow).max(axis=(4, 5)).astype(np.int8)


def qavg_pool2d(x, k, s, p, x_zp, s_in, s_out, out_zp, count_include_pad=True, qmin=-128, qmax=127):
    """Returns (output, {n: (M, shift)}) with M, shift from s_in / (s_out * n)."""
    n_, c, h, w = x.shape
    oh = (h + 2 * p[0] - k[0]) // s[0] + 1
    ow = (w + 2 * p[1] - k[1]) // s[1] + 1
    xp = np.pad(x.astype(np.int64) - x_zp, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    acc = _windows(xp, *k, *s, 1, 1, oh, ow).sum(axis=(4, 5))
    ones = np.pad(np.ones((1, 1, h, w), np.int64), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    counts = (
        np.full((oh, ow), k[0] * k[1])
        if count_include_pad
        else _windows(ones, *k, *s, 1, 1, oh, ow).sum(axis=(4, 5))[0, 0]
    )
    table = {
        int(n): quantize_multiplier(float(np.float32(s_in)) / (float(np.float32(s_out)) * n))
        for n in np.unique(counts)
    }
    mult = np.vectorize(lambda n: table[int(n)][0])(counts)
    shift = np.vectorize(lambda n: table[int(n)][1])(counts)
    return requant(acc, mult[None, None], shift[None, None], out_zp, qmin, qmax), table
