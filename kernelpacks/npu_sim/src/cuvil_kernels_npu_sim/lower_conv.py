"""Layer lowerings onto the MAC array: `lower_qconv2d`, `lower_qlinear`, `lower_qmatmul`.

Each takes shapes, numpy constants and integer attributes (zero points, per-channel multiplier
and shift from `cuvil_ref.ops.qarith.quantize_multiplier`, clamp bounds that already include a
fused relu/relu6) and returns a `Program`. Grouped and depthwise convolutions pack several groups
into one block-diagonal dense problem of up to `array_rows` input channels, so the array stays
busy on narrow groups; depthwise convolutions (one input and one output channel per group) run as
DWCONV instead (channels on the array columns, kernel taps as the reduction). Arithmetic follows
the pinned quant spec bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_kernels_npu_sim.builder import Builder
from cuvil_kernels_npu_sim.config import NpuConfig, get_config
from cuvil_kernels_npu_sim.lower_gemm import (
    Epilogue,
    GemmProblem,
    Residual,
    emit_gemm_layer,
    weight_block_offsets,
)
from cuvil_kernels_npu_sim.program import Program
from cuvil_kernels_npu_sim.tiling import ConvGeometry, ConvTiling, search_conv_tiling

Target = str | NpuConfig | Mapping[str, Any]


def _pair(v: int | Sequence[int], what: str, op: str) -> tuple[int, int]:
    pair = (int(v), int(v)) if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)
    if len(pair) != 2:
        raise ValueError(f"{op}: {what} must be an int or a pair, got {v!r}")
    return pair  # type: ignore[return-value]


def _requant_table(
    op: str, cout: int, bias: np.ndarray | None, multiplier: Any, shift: Any, co_t: int
) -> np.ndarray:
    """[bias, M, shift] int32 per output channel, laid out per co tile."""
    b = np.zeros(cout, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    m = np.broadcast_to(np.asarray(multiplier, np.int64), (cout,))
    s = np.broadcast_to(np.asarray(shift, np.int64), (cout,))
    if b.shape != (cout,):
        raise ValueError(f"{op}: bias must have {cout} entries, got {b.shape}")
    if m.min() < 0 or m.max() >= 1 << 31:
        raise ValueError(f"{op}: multipliers must be in [0, 2**31) (quantize_multiplier output)")
    if s.min() < 1 or s.max() > 62:
        raise ValueError(f"{op}: shifts must be in [1, 62] (quantize_multiplier output)")
    if np.abs(b).max(initial=0) >= 1 << 31:
        raise ValueError(f"{op}: bias must fit int32")
    parts = [
        np.concatenate([b[c : c + co_t], m[c : c + co_t], s[c : c + co_t]])
        for c in range(0, cout, co_t)
    ]
    return np.concatenate(parts).astype(np.int32)


def _check_clamp(op: str, out_zp: int, qmin: int, qmax: int) -> None:
    if not (-128 <= qmin <= qmax <= 127 and -128 <= out_zp <= 127):
        raise ValueError(
            f"{op}: need -128 <= qmin <= qmax <= 127 and out_zp in int8, got "
            f"qmin={qmin} qmax={qmax} out_zp={out_zp}"
        )


def _check_acc(op: str, k: int, operand_max: int, bias_max: int) -> None:
    if k * 255 * operand_max + bias_max >= 1 << 31:
        raise ValueError(
            f"{op}: reduction length {k} may overflow the int32 accumulator "
            f"(K * 255 * {operand_max} + |bias| >= 2**31); split the reduction"
        )


def _info(g: ConvGeometry, t: ConvTiling, packs: int) -> dict[str, object]:
    return {"geometry": g, "tiling": t, "packs": packs}


def _tiling(g: ConvGeometry, cfg: NpuConfig, residual: Residual | None) -> ConvTiling:
    """A fused residual add keeps the other operand's tiles next to the output tiles, so the
    tiler gets half the accumulator (emit_gemm_layer uses quarters)."""
    if residual is None:
        return search_conv_tiling(g, cfg)
    return search_conv_tiling(g, dataclasses.replace(cfg, acc_bytes=cfg.acc_bytes // 2))


def _skip(
    b: Builder, residual: Residual | None, shape: tuple[int, ...], layout: str
) -> Residual | None:
    """The qadd operand's input region "skip" (same shape and layout as the output)."""
    if residual is None:
        return None
    region = b.region("skip", shape, "int8", "input", layout)
    return dataclasses.replace(residual, skip_off=region.offset)


def lower_qconv2d(
    x_shape: Sequence[int],
    weight: np.ndarray,
    bias: np.ndarray | None,
    multiplier: Any,
    shift: Any,
    *,
    x_zp: int,
    out_zp: int,
    qmin: int = -128,
    qmax: int = 127,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    target: Target = "npu-v3",
    name: str = "qconv2d",
    residual: Residual | None = None,
) -> Program:
    """x: int8 NCHW of `x_shape` (input region "x"); weight: int8 [Cout, Cin/groups, KH, KW];
    bias: int32 [Cout] or None; multiplier/shift: per channel (or scalars). Output region "y",
    int8 NCHW. Both activations are stored NHWC in DRAM. `residual` fuses a following qadd
    (its other operand is input region "skip"; "y" is then the sum)."""
    cfg = get_config(target)
    n, cin, h, w = (int(v) for v in x_shape)
    weight = np.asarray(weight)
    if weight.dtype != np.int8 or weight.ndim != 4:
        raise ValueError(
            f"{name}: weight must be int8 [Cout, Cin/groups, KH, KW], got "
            f"{weight.dtype} {weight.shape}"
        )
    cout, cin_g, kh, kw = weight.shape
    if groups < 1 or cin % groups or cout % groups or cin_g != cin // groups:
        raise ValueError(
            f"{name}: Cin={cin}, Cout={cout} and weight {weight.shape} do not match groups={groups}"
        )
    (sh, sw), (ph, pw) = _pair(stride, "stride", name), _pair(padding, "padding", name)
    dh, dw = _pair(dilation, "dilation", name)
    _check_clamp(name, out_zp, qmin, qmax)
    bias_max = 0 if bias is None else int(np.abs(np.asarray(bias, np.int64)).max(initial=0))
    _check_acc(name, cin_g * kh * kw, 128, bias_max)
    cout_g = cout // groups
    if residual is not None and groups > 1:
        raise ValueError(f"{name}: a fused residual add needs a dense convolution (groups=1)")
    if groups > 1 and cin_g == 1 and cout_g == 1 and kw <= cfg.array_rows:
        return _lower_depthwise(
            cfg,
            (n, cin, h, w),
            weight,
            bias,
            multiplier,
            shift,
            (sh, sw, ph, pw, dh, dw),
            name,
            Epilogue(x_zp, 0, out_zp, qmin, qmax),
        )
    gp = max(
        d
        for d in range(1, groups + 1)
        if groups % d == 0 and (d == 1 or d * cin_g <= cfg.array_rows)
    )
    packs = groups // gp
    g = ConvGeometry(n, h, w, gp * cin_g, gp * cout_g, kh, kw, sh, sw, ph, pw, dh, dw)
    if g.oh < 1 or g.ow < 1:
        raise ValueError(f"{name}: output would be empty for input {tuple(x_shape)}")
    t = _tiling(g, cfg, residual)
    b = Builder(name, cfg)
    xr = b.region("x", (n, cin, h, w), "int8", "input", "NHWC")
    yr = b.region("y", (n, cout, g.oh, g.ow), "int8", "output", "NHWC")
    residual = _skip(b, residual, (n, cout, g.oh, g.ow), "NHWC")
    offsets = weight_block_offsets(g, t)
    w_blocks, tables = [], []
    bias_arr = None if bias is None else np.asarray(bias, np.int64).reshape(-1)
    m_arr = np.broadcast_to(np.asarray(multiplier, np.int64), (cout,))
    s_arr = np.broadcast_to(np.asarray(shift, np.int64), (cout,))
    for p in range(packs):
        dense = np.zeros((kh, kw, g.cin, g.cout), np.int8)
        for j in range(gp):
            gi = p * gp + j
            block = weight[gi * cout_g : (gi + 1) * cout_g].transpose(2, 3, 1, 0)
            dense[:, :, j * cin_g : (j + 1) * cin_g, j * cout_g : (j + 1) * cout_g] = block
        for co0, ci0 in offsets:
            w_blocks.append(dense[:, :, ci0 : ci0 + t.ci_t, co0 : co0 + t.co_t].reshape(-1))
        sl = slice(p * g.cout, (p + 1) * g.cout)
        tables.append(
            _requant_table(
                name,
                g.cout,
                None if bias_arr is None else bias_arr[sl],
                m_arr[sl],
                s_arr[sl],
                t.co_t,
            )
        )
    wr = b.region(
        "weights", (sum(x.size for x in w_blocks),), "int8", "const", data=np.concatenate(w_blocks)
    )
    tr = b.region(
        "tables", (sum(x.size for x in tables),), "int32", "const", data=np.concatenate(tables)
    )
    pack_w = wr.nbytes // packs
    problems = [
        GemmProblem(
            xr.offset,
            cin,
            p * g.cin,
            yr.offset,
            cout,
            p * g.cout,
            "const",
            wr.offset + p * pack_w,
            0,
            tr.offset + p * 12 * g.cout,
            p,
        )
        for p in range(packs)
    ]
    emit_gemm_layer(b, g, t, problems, Epilogue(x_zp, 0, out_zp, qmin, qmax), residual)
    macs = n * g.oh * g.ow * cout * cin_g * kh * kw
    return b.build(macs, _info(g, t, packs), {"x": g.touched_input_bytes(cin)})


def _lower_depthwise(
    cfg: NpuConfig,
    x_shape: tuple[int, int, int, int],
    weight: np.ndarray,
    bias: np.ndarray | None,
    multiplier: Any,
    shift: Any,
    conv: tuple[int, int, int, int, int, int],
    name: str,
    ep: Epilogue,
) -> Program:
    """One filter per channel: DWCONV with channels on the array columns and each kernel row's
    taps as the reduction (weights [kh][kw][c_t] per channel tile, no block-diagonal zeros)."""
    n, c, h, w = x_shape
    _, _, kh, kw = weight.shape
    g = ConvGeometry(n, h, w, c, c, kh, kw, *conv, depthwise=True)
    if g.oh < 1 or g.ow < 1:
        raise ValueError(f"{name}: output would be empty for input {x_shape}")
    t = search_conv_tiling(g, cfg)
    b = Builder(name, cfg)
    xr = b.region("x", x_shape, "int8", "input", "NHWC")
    yr = b.region("y", (n, c, g.oh, g.ow), "int8", "output", "NHWC")
    dense = weight[:, 0].transpose(1, 2, 0)  # [kh][kw][C]
    blocks = [dense[:, :, c0 : c0 + t.co_t].reshape(-1) for c0 in range(0, c, t.co_t)]
    wr = b.region("weights", (weight.size,), "int8", "const", data=np.concatenate(blocks))
    table = _requant_table(name, c, bias, multiplier, shift, t.co_t)
    tr = b.region("tables", table.shape, "int32", "const", data=table)
    problem = GemmProblem(xr.offset, c, 0, yr.offset, c, 0, "const", wr.offset, 0, tr.offset, 0)
    emit_gemm_layer(b, g, t, [problem], ep)
    macs = n * g.oh * g.ow * c * kh * kw
    return b.build(macs, _info(g, t, 1), {"x": g.touched_input_bytes(c)})


def lower_qlinear(
    x_shape: Sequence[int],
    weight: np.ndarray,
    bias: np.ndarray | None,
    multiplier: Any,
    shift: Any,
    *,
    x_zp: int,
    out_zp: int,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qlinear",
    residual: Residual | None = None,
) -> Program:
    """x: int8 [..., K] (region "x"); weight: int8 [N, K]; output "y" int8 [..., N];
    `residual` fuses a following qadd (other operand: region "skip")."""
    cfg = get_config(target)
    weight = np.asarray(weight)
    if weight.dtype != np.int8 or weight.ndim != 2 or weight.shape[1] != x_shape[-1]:
        raise ValueError(
            f"{name}: weight must be int8 [N, {x_shape[-1]}], got {weight.dtype} {weight.shape}"
        )
    rows = math.prod(x_shape[:-1])
    n_out, k = weight.shape
    _check_clamp(name, out_zp, qmin, qmax)
    bias_max = 0 if bias is None else int(np.abs(np.asarray(bias, np.int64)).max(initial=0))
    _check_acc(name, k, 128, bias_max)
    g = ConvGeometry(1, 1, rows, k, n_out, 1, 1, 1, 1, 0, 0, 1, 1)
    t = _tiling(g, cfg, residual)
    b = Builder(name, cfg)
    xr = b.region("x", tuple(x_shape), "int8", "input")
    yr = b.region("y", (*x_shape[:-1], n_out), "int8", "output")
    residual = _skip(b, residual, (*x_shape[:-1], n_out), "plain")
    dense = weight.T[None, None]
    blocks = [
        dense[:, :, ci0 : ci0 + t.ci_t, co0 : co0 + t.co_t].reshape(-1)
        for (co0, ci0) in weight_block_offsets(g, t)
    ]
    wr = b.region("weights", (weight.size,), "int8", "const", data=np.concatenate(blocks))
    table = _requant_table(name, n_out, bias, multiplier, shift, t.co_t)
    tr = b.region("tables", table.shape, "int32", "const", data=table)
    problem = GemmProblem(xr.offset, k, 0, yr.offset, n_out, 0, "const", wr.offset, 0, tr.offset, 0)
    emit_gemm_layer(b, g, t, [problem], Epilogue(x_zp, 0, out_zp, qmin, qmax), residual)
    return b.build(rows * k * n_out, _info(g, t, 1))


def lower_qmatmul(
    a_shape: Sequence[int],
    b_shape: Sequence[int],
    multiplier: int,
    shift: int,
    *,
    a_zp: int,
    b_zp: int,
    out_zp: int,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qmatmul",
) -> Program:
    """a: int8 [..., M, K] (region "a"), b: int8 [..., K, N] (region "b", same batch dims);
    per-tensor multiplier/shift; output "y" int8 [..., M, N]."""
    cfg = get_config(target)
    a_shape, b_shape = tuple(int(v) for v in a_shape), tuple(int(v) for v in b_shape)
    if len(a_shape) < 2 or a_shape[:-2] != b_shape[:-2] or a_shape[-1] != b_shape[-2]:
        raise ValueError(
            f"{name}: shapes {a_shape} @ {b_shape} need equal batch dims and "
            "a[-1] == b[-2] (no broadcasting)"
        )
    batch, (m, k), n_out = math.prod(a_shape[:-2]), a_shape[-2:], b_shape[-1]
    _check_clamp(name, out_zp, qmin, qmax)
    _check_acc(name, k, 255, 0)
    g = ConvGeometry(1, 1, m, k, n_out, 1, 1, 1, 1, 0, 0, 1, 1)
    t = search_conv_tiling(g, cfg)
    bld = Builder(name, cfg)
    ar = bld.region("a", a_shape, "int8", "input")
    br = bld.region("b", b_shape, "int8", "input")
    yr = bld.region("y", (*a_shape[:-1], n_out), "int8", "output")
    table = _requant_table(name, n_out, None, multiplier, shift, t.co_t)
    tr = bld.region("tables", table.shape, "int32", "const", data=table)
    problems = [
        GemmProblem(
            ar.offset + i * m * k,
            k,
            0,
            yr.offset + i * m * n_out,
            n_out,
            0,
            "act",
            br.offset + i * k * n_out,
            n_out,
            tr.offset,
            i,
        )
        for i in range(batch)
    ]
    emit_gemm_layer(bld, g, t, problems, Epilogue(a_zp, b_zp, out_zp, qmin, qmax))
    return bld.build(batch * m * k * n_out, _info(g, t, batch))
