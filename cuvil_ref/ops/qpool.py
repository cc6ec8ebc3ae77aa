"""Quantized int8 pooling: qmax_pool2d, qavg_pool2d and qadaptive_avg_pool2d.

qmax_pool2d keeps its input's scale and zero point. The average pools divide by a window count
``n`` that may vary by position, so their ``multiplier``/``shift`` are tables indexed by
``n - 1``, entry ``n - 1`` being ``quantize_multiplier(s_in / (s_out * n))``. Shared attribute
conventions: :mod:`cuvil_ref.ops.quant_common`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops import qarith
from cuvil_ref.ops import quant_common as qc
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import REQUIRED, Attr
from cuvil_ref.ops.shapes import conv_out_size

WINDOW_ATTRS = (
    Attr("kernel", "ints", REQUIRED, "(kh, kw)"),
    Attr("stride", "ints", (1, 1), "(sh, sw)"),
    Attr("padding", "ints", (0, 0, 0, 0), "(top, left, bottom, right)"),
    Attr("ceil_mode", "bool", False, "ceil instead of floor for the output size (PyTorch rule)"),
)


def _window_out(
    op: str, x: TensorType, attrs: FrozenDict, dilation: tuple[int, int]
) -> tuple[Dim, Dim]:
    k, s, p = attrs["kernel"], attrs["stride"], attrs["padding"]
    if x.rank != 4 or len(k) != 2 or len(s) != 2 or len(p) != 4 or min(*k, *s) < 1 or min(p) < 0:
        raise ShapeError(
            f"op '{op}': needs x [N,C,H,W], kernel (2), stride (2) >= 1 and "
            f"padding (4) >= 0; got x [{format_shape(x.shape)}], {k}, {s}, {p}"
        )
    ceil = attrs["ceil_mode"]
    oh = conv_out_size(x.shape[2], k[0], s[0], p[0], p[2], dilation[0], ceil)
    ow = conv_out_size(x.shape[3], k[1], s[1], p[1], p[3], dilation[1], ceil)
    return oh, ow


def _qmax_pool2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    oh, ow = _window_out("qmax_pool2d", x, attrs, attrs["dilation"])
    return (TensorType((x.shape[0], x.shape[1], oh, ow), DType.i8, x.layout, x.quant),)


def _qmax_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (kh, kw), (sh, sw), (pt, pl, _, _) = attrs["kernel"], attrs["stride"], attrs["padding"]
    dh, dw = attrs["dilation"]
    n, c, h, w = x.shape
    oh = int(conv_out_size(h, kh, sh, pt, attrs["padding"][2], dh, attrs["ceil_mode"]))
    ow = int(conv_out_size(w, kw, sw, pl, attrs["padding"][3], dw, attrs["ceil_mode"]))
    hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = np.full((n, c, hp, wp), -129, dtype=np.int16)  # below every int8: padding never wins
    xp[:, :, pt : pt + h, pl : pl + w] = x
    out = np.full((n, c, oh, ow), -129, dtype=np.int16)
    for i in range(kh):
        for j in range(kw):
            tap = xp[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            np.maximum(out, tap, out=out)
    return out.astype(np.int8)


qc.register_qop(
    "qmax_pool2d",
    ("x",),
    _qmax_pool2d_infer,
    _qmax_pool2d,
    "y = max of the int8 values in each window (as max_pool2d; padding never wins); the "
    "output keeps the input's scale and zero point.",
    (*WINDOW_ATTRS, Attr("dilation", "ints", (1, 1), "(dh, dw)")),
    family="qpool",
    conformance=grid(
        point("basic", kernel=(2, 2), stride=(2, 2), shapes=((1, 3, 8, 8),), dtypes="i8",
              values="full"),
        # negative values only: padding must never win (it is below -128, not 0 or x_zp)
        point("padding", kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1),
              shapes=((1, 2, 9, 9),), dtypes="i8", values="neg"),
        point("ceil_mode", kernel=(3, 3), stride=(2, 2), ceil_mode=True, shapes=((1, 2, 8, 8),),
              dtypes="i8", values="neg"),
        point("ceil_mode", kernel=(3, 2), stride=(2, 1), ceil_mode=True, shapes=((1, 2, 7, 8),),
              dtypes="i8", values="full"),
        point("dilation", kernel=(3, 3), dilation=(2, 2), padding=(1, 1, 1, 1),
              shapes=((1, 2, 9, 9),), dtypes="i8", values="neg"),
    ),
)


def _window_sums(
    d: np.ndarray, rows: tuple[np.ndarray, np.ndarray], cols: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Sums of ``d`` [N, C, H, W] over windows [r0, r1) x [c0, c1), via an integral image."""
    n, c, h, w = d.shape
    s = np.zeros((n, c, h + 1, w + 1), dtype=np.int64)
    np.cumsum(np.cumsum(d, axis=2), axis=3, out=s[:, :, 1:, 1:])
    (r0, r1), (c0, c1) = rows, cols

    def at(r: np.ndarray, q: np.ndarray) -> np.ndarray:
        return s[:, :, r[:, None], q[None, :]]

    return at(r1, c1) - at(r0, c1) - at(r1, c0) + at(r0, c0)


def _avg_requant(
    x: np.ndarray, attrs: dict[str, Any], rows: tuple[np.ndarray, ...], cols: tuple[np.ndarray, ...]
) -> np.ndarray:
    """``rows``/``cols`` = (start, end, count) per output index, start/end clipped to the input."""
    acc = _window_sums(x.astype(np.int64) - attrs["x_zp"], rows[:2], cols[:2])
    count = rows[2][:, None] * cols[2][None, :]
    table = len(attrs["multiplier"])
    if count.size and (count.min() < 1 or count.max() > table):
        raise qc.QuantizedOpError(
            f"average pool windows count {count.min()}..{count.max()} "
            f"elements but the multiplier table covers 1..{table}"
        )
    mult = np.asarray(attrs["multiplier"], np.int64)[count - 1]
    shift = np.asarray(attrs["shift"], np.int64)[count - 1]
    return qarith.requantize_output(acc, mult, shift, attrs["out_zp"], attrs["qmin"], attrs["qmax"])


def avg_pool_windows(
    size: int, out: int, k: int, s: int, lo: int, hi: int, include_pad: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, count) of each avg_pool2d window along one axis (PyTorch's divisor rule)."""
    start = np.arange(out, dtype=np.int64) * s - lo
    end = start + k
    padded_count = np.minimum(end, size + hi) - start
    start_c, end_c = np.clip(start, 0, size), np.clip(end, 0, size)
    count = padded_count if include_pad else end_c - start_c
    return start_c, end_c, count


def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, count) of each adaptive pooling window: [floor(i*L/O), ceil((i+1)*L/O))."""
    i = np.arange(out, dtype=np.int64)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    return start, end, end - start


def _avg_infer(
    op: str, shape: Callable[[TensorType, FrozenDict], tuple[Dim, Dim]]
) -> Callable[..., tuple[TensorType, ...]]:
    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        x = types[0]
        qc.check_out(op, attrs)
        qc.check_zp(op, "x_zp", attrs["x_zp"])
        if len(attrs["multiplier"]) != len(attrs["shift"]) or not attrs["multiplier"]:
            raise qc.fail(
                op,
                "multiplier and shift are tables of equal, non-zero length "
                "(entry n-1 for a window of n elements)",
            )
        qc.check_rescale(op, attrs, (len(attrs["multiplier"]),))
        oh, ow = shape(x, attrs)
        _check_table(op, x, (oh, ow), attrs)
        return (qc.qtype((x.shape[0], x.shape[1], oh, ow), attrs, x.layout),)

    return infer


def _check_table(op: str, x: TensorType, out: tuple[Dim, Dim], attrs: FrozenDict) -> None:
    """The multiplier table covers every window's element count (known when the sizes are
    static): a short table is a graph error, not a run-time one."""
    h, w = x.shape[2], x.shape[3]
    if not all(isinstance(d, int) for d in (h, w, *out)):
        return
    if "kernel" in attrs:
        (kh, kw), (sh, sw), p = attrs["kernel"], attrs["stride"], attrs["padding"]
        inc = attrs["count_include_pad"]
        rows = avg_pool_windows(int(h), int(out[0]), kh, sh, p[0], p[2], inc)[2]
        cols = avg_pool_windows(int(w), int(out[1]), kw, sw, p[1], p[3], inc)[2]
    else:
        rows = adaptive_windows(int(h), int(out[0]))[2]
        cols = adaptive_windows(int(w), int(out[1]))[2]
    if rows.size and cols.size:
        most = int(rows.max()) * int(cols.max())
        if most > len(attrs["multiplier"]):
            raise qc.fail(
                op,
                f"windows hold up to {most} elements but the multiplier table covers "
                f"1..{len(attrs['multiplier'])} (entry n-1 is for a window of n elements)",
            )


def _qavg_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (kh, kw), (sh, sw), p = attrs["kernel"], attrs["stride"], attrs["padding"]
    h, w = x.shape[2:]
    oh = int(conv_out_size(h, kh, sh, p[0], p[2], 1, attrs["ceil_mode"]))
    ow = int(conv_out_size(w, kw, sw, p[1], p[3], 1, attrs["ceil_mode"]))
    inc = attrs["count_include_pad"]
    rows = avg_pool_windows(h, oh, kh, sh, p[0], p[2], inc)
    cols = avg_pool_windows(w, ow, kw, sw, p[1], p[3], inc)
    return _avg_requant(x, attrs, rows, cols)


AVG_ATTRS = (
    qc.X_ZP,
    Attr("multiplier", "ints", REQUIRED, "table: entry n-1 is M for a window of n"),
    Attr("shift", "ints", REQUIRED, "table: entry n-1 is the shift for a window of n"),
    *qc.OUT_ATTRS,
)

qc.register_qop(
    "qavg_pool2d",
    ("x",),
    _avg_infer("qavg_pool2d", lambda x, a: _window_out("qavg_pool2d", x, a, (1, 1))),
    _qavg_pool2d,
    "acc = sum over the window of (x - x_zp) (padding adds 0); n = counted elements "
    "(avg_pool2d's count_include_pad rule, ceil-mode overhang never counted); out = "
    "clamp(out_zp + rescale(acc, M[n-1], shift[n-1]), qmin, qmax), table entries from "
    "s_in / (s_out * n).",
    (
        *WINDOW_ATTRS,
        Attr("count_include_pad", "bool", True, "count padding in the divisor"),
        *AVG_ATTRS,
    ),
    family="qpool",
    conformance=grid(
        *(
            point(rule, **attrs, x_zp=-5, out_scale=0.04, out_zp=3,
                  hints={"pool_ratio": 0.05 / 0.04,
                         "pool_max": attrs["kernel"][0] * attrs["kernel"][1]},
                  shapes=(shape,), dtypes="i8", values="full")
            for rule, shape, attrs in (
                ("basic", (1, 3, 8, 8), {"kernel": (2, 2), "stride": (2, 2)}),
                ("count_include_pad", (1, 2, 9, 9),
                 {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1)}),
                ("count_include_pad", (1, 2, 9, 9),
                 {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1),
                  "count_include_pad": False}),
                # the last window overhangs the input: the overhang is never counted
                ("ceil_mode", (1, 2, 8, 8),
                 {"kernel": (3, 3), "stride": (2, 2), "ceil_mode": True}),
                ("ceil_mode", (1, 2, 7, 7),
                 {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1), "ceil_mode": True}),
                ("ceil_mode", (1, 2, 6, 6),
                 {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1), "ceil_mode": True,
                  "count_include_pad": False}),
            )
        ),
        # s_in = s_out over 2x2 windows: sums / 4 land on halves, which round up (+inf)
        point("tie", kernel=(2, 2), stride=(2, 2), x_zp=0, out_scale=0.05,
              hints={"pool_ratio": 1.0, "pool_max": 4}, shapes=((1, 2, 8, 8),), dtypes="i8",
              values="full"),
    ),
)


def _adaptive_shape(x: TensorType, attrs: FrozenDict) -> tuple[Dim, Dim]:
    size = attrs["output_size"]
    if x.rank != 4 or len(size) != 2 or min(size) < 1:
        raise ShapeError(
            f"qadaptive_avg_pool2d needs x [N,C,H,W] and output_size (2) >= 1, got "
            f"[{format_shape(x.shape)}] and {size}"
        )
    for d in x.shape[2:]:
        if qc.static("qadaptive_avg_pool2d", d, "spatial dims") < 1:
            raise qc.fail(
                "qadaptive_avg_pool2d",
                f"needs non-empty spatial dims (an empty window has no average), got "
                f"[{format_shape(x.shape)}]",
            )
    return size[0], size[1]


def _qadaptive_avg_pool2d(x: np.ndarray, **attrs: Any) -> np.ndarray:
    (oh, ow), (h, w) = attrs["output_size"], x.shape[2:]
    return _avg_requant(x, attrs, adaptive_windows(h, oh), adaptive_windows(w, ow))


qc.register_qop(
    "qadaptive_avg_pool2d",
    ("x",),
    _avg_infer("qadaptive_avg_pool2d", _adaptive_shape),
    _qadaptive_avg_pool2d,
    "Windows [floor(i*H/OH), ceil((i+1)*H/OH)) x (same for W); acc = sum of (x - x_zp), "
    "n = window size; out = clamp(out_zp + rescale(acc, M[n-1], shift[n-1]), qmin, qmax).",
    (Attr("output_size", "ints", REQUIRED, "(OH, OW)"), *AVG_ATTRS),
    family="qpool",
    conformance=grid(
        point("global", output_size=(1, 1), x_zp=2, out_scale=0.05, out_zp=2,
              hints={"pool_ratio": 1.0, "pool_max": 49}, shapes=((1, 4, 7, 7),), dtypes="i8",
              values="full"),
        point("overlap", output_size=(3, 4), x_zp=2, out_scale=0.05, out_zp=2,
              hints={"pool_ratio": 1.0, "pool_max": 70}, shapes=((1, 2, 10, 7),), dtypes="i8",
              values="full"),
    ),
)
