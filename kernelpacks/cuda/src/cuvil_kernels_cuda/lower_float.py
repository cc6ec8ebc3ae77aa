"""Lowerings of the float ops (f32, f16 storage; float32 arithmetic): elementwise, activations,
GEMM/conv (plain and fused), normalization, pooling and reductions."""

from __future__ import annotations

from typing import Any

from cuvil_kernels_cuda.lower_common import (
    FLOAT,
    INF,
    EmitContext,
    first,
    kernels,
    symmetric_pads,
    window_check,
)
from cuvil_ref.ir.graph import Node

#: IR op -> library unary op (same formula).
UNARY = {
    "neg": "neg",
    "abs": "abs",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "relu": "relu",
    "relu6": "relu6",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "erf": "erf",
    "silu": "silu",
    "hardswish": "hardswish",
}
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
#: fused epilogue activation -> library activation.
EPILOGUE = {
    "none": "identity",
    "relu": "relu",
    "relu6": "relu6",
    "gelu": "gelu",
    "gelu_tanh": "gelu_tanh",
    "silu": "silu",
    "hardswish": "hardswish",
    "clamp": "clamp",
}


def _same_float_inputs(node: Node) -> str | None:
    dts = {v.type.dtype.value for v in node.inputs}
    if len(dts) != 1:
        return f"{node.op}: mixed input dtypes {sorted(dts)} not supported"
    return None


# --- elementwise ---------------------------------------------------------------------------------


def _unary(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").unary(UNARY[node.op], args[0])]


def _gelu(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    name = "gelu_tanh" if node.attrs["approximate"] == "tanh" else "gelu"
    return [kernels("elementwise").unary(name, args[0])]


#: Why gelu(approximate='tanh') is declined everywhere (plain, fused epilogue, chains).
GELU_TANH = (
    "gelu approximate='tanh' not supported: 1 + tanh(u) cancels for x < 0 and amplifies the "
    "reference's float32 tanh rounding beyond the 4-ulp bound"
)


def _gelu_check(node: Node) -> str | None:
    return None if node.attrs["approximate"] == "none" else GELU_TANH


def _clamp(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    if node.op == "hardtanh":
        lo, hi = a["min_val"], a["max_val"]
    else:
        lo, hi = first(a, "min", -INF), first(a, "max", INF)
    return [kernels("elementwise").unary("clamp", args[0], float(lo), float(hi))]


def _binary(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").binary(node.op, args[0], args[1])]


def _where(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").where(args[0], args[1], args[2])]


def _where_check(node: Node) -> str | None:
    if node.inputs[1].type.dtype != node.inputs[2].type.dtype:
        return "where: a and b of different dtypes not supported"
    if node.inputs[0].type.dtype.value != "bool":
        return "where: condition must be bool"
    return None


def _fused_elementwise_steps(node: Node) -> list[Any] | str:
    from cuvil_ref.ops.fused import parse_program

    steps: list[Any] = []
    dtype = node.inputs[0].type.dtype.value
    if dtype != "f32":
        return f"fused_elementwise: dtype {dtype} not supported (f32 chains only)"
    for op, attrs, scalar in parse_program(node.attrs["program"]):
        if scalar is not None:
            if op not in BINARY or scalar[1] != "f32":
                return f"fused_elementwise: step {op} with a {scalar[1]} scalar not supported"
            steps.append((op, float(scalar[0]), 0.0, scalar[2] == "lhs"))
        elif op in UNARY:
            steps.append((UNARY[op], 0.0, 0.0, False))
        elif op == "gelu" and attrs["approximate"] == "none":
            steps.append(("gelu", 0.0, 0.0, False))
        elif op in ("clamp", "hardtanh"):
            lo = attrs["min_val"] if op == "hardtanh" else first(attrs, "min", -INF)
            hi = attrs["max_val"] if op == "hardtanh" else first(attrs, "max", INF)
            steps.append(("clamp", float(lo), float(hi), False))
        else:
            return f"fused_elementwise: step {op} not supported"
    return steps


def _fused_elementwise_check(node: Node) -> str | None:
    steps = _fused_elementwise_steps(node)
    return steps if isinstance(steps, str) else None


def _fused_elementwise(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    ew = kernels("elementwise")
    steps = _fused_elementwise_steps(node)
    assert not isinstance(steps, str), steps
    return [ew.fused(args[0], [ew.Step(op, a, b, rev) for op, a, b, rev in steps])]


# --- GEMM and conv -------------------------------------------------------------------------------


def _epilogue(node: Node) -> Any:
    a = node.attrs
    return kernels("epilogue").Epilogue(
        EPILOGUE[a["activation"]],
        float(first(a, "activation_min", -INF)),
        float(first(a, "activation_max", INF)),
        a["order"] == "residual_then_activation",
    )


def _residual(node: Node, args: list[Any]) -> Any:
    return args[3] if node.attrs.get("has_residual") else None


def _epilogue_check(node: Node) -> str | None:
    if node.op.startswith("fused_") and node.attrs["activation"] == "gelu_tanh":
        return GELU_TANH
    return None


def _conv_check(node: Node) -> str | None:
    if _epilogue_check(node):
        return _epilogue_check(node)
    pads = symmetric_pads(node.op, node.attrs["padding"])
    if isinstance(pads, str):
        return pads
    if node.attrs.get("data_layout", "NCHW") != "NCHW":
        return f"{node.op}: data_layout {node.attrs['data_layout']} not supported (NCHW only)"
    if node.inputs[0].type.rank != 4:
        return f"{node.op}: only rank-4 NCHW inputs are supported"
    return _same_float_inputs(node)


def _conv(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    pads = symmetric_pads(node.op, a["padding"])
    fused = node.op == "fused_conv2d"
    bias = args[2] if len(args) > 2 else None
    epi = _epilogue(node) if fused else kernels("epilogue").NO_EPILOGUE
    res = _residual(node, args) if fused else None
    out = kernels("conv").conv2d(
        args[0], args[1], bias, tuple(a["stride"]), pads, tuple(a["dilation"]), a["groups"],
        residual=res, epilogue=epi,
    )  # fmt: skip
    return [out]


def _linear(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    fused = node.op == "fused_linear"
    epi = _epilogue(node) if fused else kernels("epilogue").NO_EPILOGUE
    bias = args[2] if len(args) > 2 else None
    res = _residual(node, args) if fused else None
    return [kernels("gemm").linear(args[0], args[1], bias, res, epi)]


def _matmul_check(node: Node) -> str | None:
    a, b = node.inputs[0].type, node.inputs[1].type
    if a.rank < 2 or b.rank < 2:
        return f"{node.op}: 1-D operands not supported (both must be at least 2-D)"
    if _epilogue_check(node):
        return _epilogue_check(node)
    if node.op == "fused_matmul":
        bias, n = node.inputs[2].type, b.shape[-1]
        if bias.rank == 0 or bias.shape[-1] != n or any(d != 1 for d in bias.shape[:-1]):
            return "fused_matmul: bias must be [N] (one value per output column)"
    return _same_float_inputs(node)


def _linear_check(node: Node) -> str | None:
    return _epilogue_check(node) or _same_float_inputs(node)


def _matmul(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    gemm = kernels("gemm")
    if node.op == "matmul":
        return [gemm.matmul(args[0], args[1])]
    bias = args[2].reshape(args[2].size)
    return [gemm.matmul(args[0], args[1], bias, _residual(node, args), _epilogue(node))]


# --- normalization -------------------------------------------------------------------------------


def _batch_norm(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    extra = args[3:] + [None] * (5 - len(args))
    w, b = extra[0], extra[1]
    return [kernels("normalize").batch_norm(args[0], args[1], args[2], w, b, node.attrs["eps"])]


def _layer_norm(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    w = args[1] if len(args) > 1 else None
    b = args[2] if len(args) > 2 else None
    shape = tuple(node.attrs["normalized_shape"])
    return [kernels("normalize").layer_norm(args[0], shape, w, b, node.attrs["eps"])]


def _layer_norm_check(node: Node) -> str | None:
    if len(node.attrs["normalized_shape"]) == 0:
        return "layer_norm: empty normalized_shape not supported"
    return _same_float_inputs(node)


def _softmax(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    norm = kernels("normalize")
    fn = norm.log_softmax if node.op == "log_softmax" else norm.softmax
    return [fn(args[0], node.attrs["axis"])]


# --- pooling -------------------------------------------------------------------------------------


def _pool_check(node: Node) -> str | None:
    return window_check(node, dilation=node.op == "max_pool2d")


def _pool(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a, pool = node.attrs, kernels("pool")
    pads = symmetric_pads(node.op, a["padding"])
    stride = tuple(a["stride"]) if a["stride"] else tuple(a["kernel"])
    if node.op == "max_pool2d":
        out = pool.max_pool2d(
            args[0], tuple(a["kernel"]), stride, pads, tuple(a["dilation"]), a["ceil_mode"]
        )
    else:
        out = pool.avg_pool2d(
            args[0], tuple(a["kernel"]), stride, pads, a["ceil_mode"], a["count_include_pad"],
            a["divisor_override"],
        )  # fmt: skip
    return [out]


def _adaptive_check(node: Node) -> str | None:
    if node.inputs[0].type.rank != 4 or len(node.attrs["output_size"]) != 2:
        return f"{node.op}: only NCHW inputs with a 2-entry output_size are supported"
    return None


def _adaptive(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("pool").adaptive_avg_pool2d(args[0], tuple(node.attrs["output_size"]))]


# --- reductions ----------------------------------------------------------------------------------

REDUCE = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min"}


def _reduce(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    if node.op in ("argmax", "argmin"):
        axes = None if a["axis"] is None else (a["axis"],)
        out = kernels("reduce").reduce(node.op, args[0], axes, a["keepdim"])
    else:
        axes = None if a["axes"] is None else tuple(a["axes"])
        out = kernels("reduce").reduce(REDUCE[node.op], args[0], axes, a["keepdim"])
    return [out.reshape(cx.shape(node.outputs[0]))]


def _reduce_check(node: Node) -> str | None:
    x = node.inputs[0].type
    if x.rank == 0:
        return f"{node.op}: rank-0 inputs not supported"
    if node.op in ("argmax", "argmin") and node.attrs["keepdim"] and node.attrs["axis"] is None:
        return f"{node.op}: keepdim without an axis not supported"
    if node.outputs[0].type.dtype.value not in ("f32", "f16", "i64"):
        return f"{node.op}: output dtype {node.outputs[0].type.dtype.value} not supported"
    return None


ENTRIES: dict[str, tuple[Any, ...]] = {
    **{op: (_unary, FLOAT) for op in UNARY},
    "gelu": (_gelu, FLOAT, _gelu_check),
    "clamp": (_clamp, FLOAT),
    "hardtanh": (_clamp, FLOAT),
    **{op: (_binary, FLOAT, _same_float_inputs) for op in BINARY},
    "where": (_where, frozenset({"bool"}), _where_check),
    "fused_elementwise": (_fused_elementwise, FLOAT, _fused_elementwise_check),
    "conv2d": (_conv, FLOAT, _conv_check),
    "fused_conv2d": (_conv, FLOAT, _conv_check),
    "linear": (_linear, FLOAT, _linear_check),
    "fused_linear": (_linear, FLOAT, _linear_check),
    "matmul": (_matmul, FLOAT, _matmul_check),
    "fused_matmul": (_matmul, FLOAT, _matmul_check),
    "batch_norm": (_batch_norm, FLOAT, _same_float_inputs),
    "layer_norm": (_layer_norm, FLOAT, _layer_norm_check),
    "softmax": (_softmax, FLOAT),
    "log_softmax": (_softmax, FLOAT),
    "max_pool2d": (_pool, FLOAT, _pool_check),
    "avg_pool2d": (_pool, FLOAT, _pool_check),
    "adaptive_avg_pool2d": (_adaptive, FLOAT, _adaptive_check),
    **{op: (_reduce, FLOAT, _reduce_check) for op in (*REDUCE, "argmax", "argmin")},
}
