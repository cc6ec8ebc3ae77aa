"""Emitters of the int8 template families onto the bit-exact quantized kernels
(docs/semantics.md).

Elementwise: quantize/dequantize (per tensor), requantize, qadd, qmul (equal shapes). GEMM-like:
qlinear (per-tensor or per-channel multipliers), qmatmul (per tensor, with ``b_zp``) and qconv2d
(NCHW, symmetric padding). Multipliers and shifts of GEMM-like ops are int32 device tables; a
per-tensor qconv2d multiplier is repeated per output channel. A node whose int32 accumulation
could overflow is declined (the interpreter accumulates exactly).
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_hip.kernels.gemm_variant import choose_gemm_variant
from cuvil_kernels_hip.kernels.qgemm import qconv2d_source, qgemm_source
from cuvil_kernels_hip.kernels.quant_elementwise import quant_elementwise_source
from cuvil_kernels_hip.kernels.tiled_core import THREADS_XY
from cuvil_kernels_hip.lowerings.common import (
    FLOAT_STORAGE,
    LowerContext,
    f32,
    first_reason,
    grid_1d,
    i32,
    i64,
    numel,
)
from cuvil_kernels_hip.lowerings.gemm import conv_geometry, conv_grid, conv_reason, gemm_dims
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext, checks
from cuvil_ref.plugin.kit.templates import Emitter

QGEMM_MICRO = 2


def _dtype_reason(node: Node, want: dict[int, DType], out: DType = DType.i8) -> str | None:
    for i, dtype in want.items():
        v = node.inputs[i]
        if v.type.dtype != dtype:
            got = v.type.dtype.value
            return f"input %{v.name} is {got}; the hip {node.op} kernel takes {dtype.value}"
    if node.outputs[0].type.dtype != out:
        got = node.outputs[0].type.dtype.value
        return f"output is {got}; the hip {node.op} kernel writes {out.value}"
    return None


def _req_tail(node: Node) -> tuple[object, ...]:
    return tuple(i32(node.attrs[k]) for k in ("out_zp", "qmin", "qmax"))


def _elementwise(
    node: Node, ctx: LowerContext, op: str, args: tuple[object, ...], fdt: str
) -> None:
    n = numel(tuple(int(d) for d in node.outputs[0].type.shape))
    src = quant_elementwise_source(op, ctx.options, float_dtype=fdt)
    block = ctx.options.block_size
    grid = grid_1d(n, block, ctx.options.loop_unroll_factor)
    ctx.launch(src, grid, (block, 1, 1), (*args, i64(n)))


# --- elementwise --------------------------------------------------------------------------------


def check_quantize(node: Node, cx: CheckContext) -> str | None:
    if reason := checks.per_tensor(node):
        return reason
    if node.inputs[0].type.dtype not in FLOAT_STORAGE:
        return f"quantize of {node.inputs[0].type.dtype.value}: the hip kernel reads floats"
    return _dtype_reason(node, {})


def lower_quantize(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    args = (x.name, y.name, f32(node.attrs["scale"][0]), i32(node.attrs["zero_point"][0]))
    _elementwise(node, ctx, "quantize", args, FLOAT_STORAGE[x.type.dtype])


def check_dequantize(node: Node, cx: CheckContext) -> str | None:
    if reason := checks.per_tensor(node):
        return reason
    out = node.outputs[0].type.dtype
    if out not in FLOAT_STORAGE:
        return f"dequantize to {out.value}: the hip kernel writes floats"
    return _dtype_reason(node, {0: DType.i8}, out)


def lower_dequantize(node: Node, ctx: LowerContext) -> None:
    q, y = node.inputs[0], node.outputs[0]
    args = (q.name, y.name, f32(node.attrs["scale"][0]), i32(node.attrs["zero_point"][0]))
    _elementwise(node, ctx, "dequantize", args, FLOAT_STORAGE[y.type.dtype])


def check_requantize(node: Node, cx: CheckContext) -> str | None:
    return _dtype_reason(node, {0: DType.i8})


def lower_requantize(node: Node, ctx: LowerContext) -> None:
    a = node.attrs
    scalars = (i32(a["x_zp"]), i32(a["multiplier"][0]), i32(a["shift"][0]), *_req_tail(node))
    _elementwise(
        node, ctx, "requantize", (node.inputs[0].name, node.outputs[0].name, *scalars), "float32"
    )


def check_qbinary(node: Node, cx: CheckContext) -> str | None:
    if reason := checks.equal_shapes(node):
        return reason
    return _dtype_reason(node, {0: DType.i8, 1: DType.i8})


def lower_qbinary(node: Node, ctx: LowerContext) -> None:
    a = node.attrs
    names = (node.inputs[0].name, node.inputs[1].name, node.outputs[0].name)
    zps = (i32(a["a_zp"]), i32(a["b_zp"]))
    if node.op == "qadd":
        scalars = (*zps, i32(a["multiplier"][0]), i32(a["multiplier"][1]), i32(a["shift"][0]))
    else:
        scalars = (*zps, i32(a["multiplier"][0]), i32(a["shift"][0]))
    _elementwise(node, ctx, node.op, (*names, *scalars, *_req_tail(node)), "float32")


# --- GEMM-like ----------------------------------------------------------------------------------


def _tables(node: Node, ctx: LowerContext, channels: int) -> tuple[str, str]:
    mult, shift = node.attrs["multiplier"], node.attrs["shift"]
    if len(mult) == 1 and channels > 1:
        mult, shift = mult * channels, shift * channels
    return (
        ctx.add_constant(node, "multiplier", np.asarray(mult, dtype=np.int32)),
        ctx.add_constant(node, "shift", np.asarray(shift, dtype=np.int32)),
    )


def check_qgemm(node: Node, cx: CheckContext) -> str | None:
    ints = {0: DType.i8, 1: DType.i8, **({2: DType.i32} if len(node.inputs) > 2 else {})}
    reason = _dtype_reason(node, ints)
    if reason:
        return reason
    dims = gemm_dims(node)
    if isinstance(dims, str):
        return dims
    term = 255 * 255 if node.op == "qmatmul" else 255 * 128
    return checks.int32_accumulation(node, dims[3], term)


def lower_qgemm(node: Node, ctx: LowerContext) -> None:
    dims = gemm_dims(node)
    assert not isinstance(dims, str)
    batch, m, n, k, sa, sb = dims
    is_linear = node.op == "qlinear"
    bias = len(node.inputs) > 2
    weight = ctx.const(node.inputs[1])
    variant = choose_gemm_variant("int8", m, n, k, ctx.options.features).name
    if not is_linear or weight is None:
        variant = "simt"  # the WMMA path needs symmetric [N, K] weights known at compile time
    per_channel = len(node.attrs["multiplier"]) > 1
    micro = 4 if variant == "wmma" else QGEMM_MICRO
    src = qgemm_source(
        ctx.options,
        bias=bias,
        per_channel=per_channel,
        b_zero_point=not is_linear,
        trans_b=is_linear,
        variant=variant,
        micro=micro,
    )
    ctx.notes.append(f"%{node.outputs[0].name}: qgemm {m}x{n}x{k} {variant}")
    args: tuple[object, ...] = (node.inputs[0].name, node.inputs[1].name)
    if bias:
        args += (node.inputs[2].name,)
    if variant == "wmma":
        assert weight is not None
        wsum = weight.astype(np.int32).sum(axis=1, dtype=np.int32)
        args += (ctx.add_constant(node, "wsum", wsum),)
    mult, shift = _tables(node, ctx, n if per_channel else 1)
    a = node.attrs
    zps = (a["x_zp"], 0) if is_linear else (a["a_zp"], a["b_zp"])
    args += (node.outputs[0].name, mult, shift, i32(m), i32(n), i32(k), i64(sa), i64(sb))
    args += (i32(zps[0]), i32(zps[1]), *_req_tail(node))
    tile = THREADS_XY * micro
    ctx.launch(src, (-(-n // tile), -(-m // tile), batch), (THREADS_XY, THREADS_XY, 1), args)


def check_qconv(node: Node, cx: CheckContext) -> str | None:
    ints = {0: DType.i8, 1: DType.i8, **({2: DType.i32} if len(node.inputs) > 2 else {})}
    _, cg, kh, kw = (int(d) for d in node.inputs[1].type.shape)
    return first_reason(
        _dtype_reason(node, ints),
        conv_reason(node),
        checks.int32_accumulation(node, cg * kh * kw, 255 * 128),
    )


def lower_qconv(node: Node, ctx: LowerContext) -> None:
    bias = len(node.inputs) > 2
    src = qconv2d_source(ctx.options, bias=bias, micro=QGEMM_MICRO)
    oc = int(node.inputs[1].type.shape[0])
    mult, shift = _tables(node, ctx, oc)
    a = node.attrs
    args = (*(v.name for v in node.inputs), node.outputs[0].name, mult, shift)
    args += (*conv_geometry(node), i32(a["x_zp"]), *_req_tail(node))
    ctx.launch(src, conv_grid(node, QGEMM_MICRO), (THREADS_XY, THREADS_XY, 1), args)


EMITTERS: dict[str, Emitter] = {
    "quantize": Emitter(lower_quantize, check=check_quantize),
    "dequantize": Emitter(lower_dequantize, check=check_dequantize),
    "requantize": Emitter(lower_requantize, check=check_requantize),
    "qbinary": Emitter(lower_qbinary, check=check_qbinary),
    "qgemm": Emitter(lower_qgemm, check=check_qgemm),
    "qconv2d": Emitter(lower_qconv, check=check_qconv),
}
