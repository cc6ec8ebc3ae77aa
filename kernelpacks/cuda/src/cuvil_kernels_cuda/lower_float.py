"""Emitters of the float template families (f32, f16 storage; float32 arithmetic): pointwise ops,
GEMM/conv (plain and fused), normalization, pooling and reductions. Which op is which formula is
the shared table ``cuvil_ref.plugin.kit.templates.TEMPLATES``."""

from __future__ import annotations

from typing import Any

from cuvil_kernels_cuda.lower_common import FLOAT, INF, EmitContext, first, kernels, pads
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops.fused import ACTIVATIONS
from cuvil_ref.plugin.kit import CheckContext, checks
from cuvil_ref.plugin.kit.templates import TEMPLATES, Emitter, formula

#: fused epilogue activation (``cuvil_ref.ops.fused.ACTIVATIONS``) -> library activation.
EPILOGUE = {name: "identity" if name == "none" else name for name in ACTIVATIONS}


def _same_float_inputs(node: Node, cx: CheckContext | None = None) -> str | None:
    dts = {v.type.dtype.value for v in node.inputs}
    if len(dts) != 1:
        return f"{node.op}: mixed input dtypes {sorted(dts)} not supported"
    return None


# --- elementwise ---------------------------------------------------------------------------------


def _unary(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").unary(formula(node.op), args[0])]


#: Why gelu(approximate='tanh') is declined everywhere (plain, fused epilogue, chains).
GELU_TANH = (
    "gelu approximate='tanh' not supported: 1 + tanh(u) cancels for x < 0 and amplifies the "
    "reference's float32 tanh rounding beyond the 4-ulp bound"
)


def _unary_check(node: Node, cx: CheckContext) -> str | None:
    if node.op == "gelu" and node.attrs["approximate"] != "none":
        return GELU_TANH
    return None


def _clamp(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    if node.op == "hardtanh":
        lo, hi = a["min_val"], a["max_val"]
    else:
        lo, hi = first(a, "min", -INF), first(a, "max", INF)
    return [kernels("elementwise").unary("clamp", args[0], float(lo), float(hi))]


def _binary(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").binary(formula(node.op), args[0], args[1])]


def _where(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("elementwise").where(args[0], args[1], args[2])]


def _where_check(node: Node, cx: CheckContext) -> str | None:
    if node.inputs[1].type.dtype != node.inputs[2].type.dtype:
        return "where: a and b of different dtypes not supported"
    if node.inputs[0].type.dtype.value != "bool":
        return "where: condition must be bool"
    return None


def _fused_elementwise_steps(node: Node) -> list[Any] | str:
    from cuvil_ref.ops.fused_elementwise import parse_program

    steps: list[Any] = []
    dtype = node.inputs[0].type.dtype.value
    if dtype != "f32":
        return f"fused_elementwise: dtype {dtype} not supported (f32 chains only)"
    for op, attrs, scalar in parse_program(node.attrs["program"]):
        family = TEMPLATES[op].family if op in TEMPLATES else ""
        if scalar is not None:
            if family != "binary" or scalar[1] != "f32":
                return f"fused_elementwise: step {op} with a {scalar[1]} scalar not supported"
            steps.append((formula(op), float(scalar[0]), 0.0, scalar[2] == "lhs"))
        elif family == "unary" and op != "gelu":
            steps.append((formula(op), 0.0, 0.0, False))
        elif op == "gelu" and attrs["approximate"] == "none":
            steps.append(("gelu", 0.0, 0.0, False))
        elif op in ("clamp", "hardtanh"):
            lo = attrs["min_val"] if op == "hardtanh" else first(attrs, "min", -INF)
            hi = attrs["max_val"] if op == "hardtanh" else first(attrs, "max", INF)
            steps.append(("clamp", float(lo), float(hi), False))
        else:
            return f"fused_elementwise: step {op} not supported"
    return steps


def _fused_elementwise_check(node: Node, cx: CheckContext) -> str | None:
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


def _epilogue_check(node: Node, cx: CheckContext | None = None) -> str | None:
    if node.op.startswith("fused_") and node.attrs["activation"] == "gelu_tanh":
        return GELU_TANH
    return None


def _conv_check(node: Node, cx: CheckContext) -> str | None:
    return checks.first_reason(
        _epilogue_check(node),
        checks.padding_reason(node),
        checks.nchw(node),
        _same_float_inputs(node),
    )


def _conv(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    fused = node.op == "fused_conv2d"
    bias = args[2] if len(args) > 2 else None
    epi = _epilogue(node) if fused else kernels("epilogue").NO_EPILOGUE
    res = _residual(node, args) if fused else None
    out = kernels("conv").conv2d(
        args[0], args[1], bias, tuple(a["stride"]), pads(node), tuple(a["dilation"]), a["groups"],
        residual=res, epilogue=epi,
    )  # fmt: skip
    return [out]


def _linear(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    fused = node.op == "fused_linear"
    epi = _epilogue(node) if fused else kernels("epilogue").NO_EPILOGUE
    bias = args[2] if len(args) > 2 else None
    res = _residual(node, args) if fused else None
    return [kernels("gemm").linear(args[0], args[1], bias, res, epi)]


def _gemm_check(node: Node, cx: CheckContext) -> str | None:
    if formula(node.op) == "linear":
        return _epilogue_check(node) or _same_float_inputs(node)
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


def _gemm(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    if formula(node.op) == "linear":
        return _linear(node, args, cx)
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


def _layer_norm_check(node: Node, cx: CheckContext) -> str | None:
    if len(node.attrs["normalized_shape"]) == 0:
        return "layer_norm: empty normalized_shape not supported"
    return _same_float_inputs(node)


def _softmax(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    norm = kernels("normalize")
    fn = norm.log_softmax if node.op == "log_softmax" else norm.softmax
    return [fn(args[0], node.attrs["axis"])]


# --- pooling -------------------------------------------------------------------------------------


def _pool_check(node: Node, cx: CheckContext) -> str | None:
    if formula(node.op) == "adaptive_avg":
        return _adaptive_check(node)
    return checks.pool_window(node)


def _pool(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    if formula(node.op) == "adaptive_avg":
        return _adaptive(node, args, cx)
    a, pool = node.attrs, kernels("pool")
    stride = tuple(a["stride"]) if a["stride"] else tuple(a["kernel"])
    if node.op == "max_pool2d":
        out = pool.max_pool2d(
            args[0], tuple(a["kernel"]), stride, pads(node), tuple(a["dilation"]), a["ceil_mode"]
        )
    else:
        out = pool.avg_pool2d(
            args[0], tuple(a["kernel"]), stride, pads(node), a["ceil_mode"], a["count_include_pad"],
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

def _reduce(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    if "axis" in a:  # argmax / argmin
        axes = None if a["axis"] is None else (a["axis"],)
    else:
        axes = None if a["axes"] is None else tuple(a["axes"])
    out = kernels("reduce").reduce(formula(node.op), args[0], axes, a["keepdim"])
    return [out.reshape(cx.shape(node.outputs[0]))]


def _reduce_check(node: Node, cx: CheckContext) -> str | None:
    x = node.inputs[0].type
    if x.rank == 0:
        return f"{node.op}: rank-0 inputs not supported"
    if node.op in ("argmax", "argmin") and node.attrs["keepdim"] and node.attrs["axis"] is None:
        return f"{node.op}: keepdim without an axis not supported"
    if node.outputs[0].type.dtype.value not in ("f32", "f16", "i64"):
        return f"{node.op}: output dtype {node.outputs[0].type.dtype.value} not supported"
    return None


EMITTERS: dict[str, Emitter] = {
    "unary": Emitter(_unary, FLOAT, _unary_check),
    "clamp": Emitter(_clamp, FLOAT),
    "binary": Emitter(_binary, FLOAT, _same_float_inputs),
    "select": Emitter(_where, frozenset({DType.bool}), _where_check),
    "chain": Emitter(_fused_elementwise, FLOAT, _fused_elementwise_check),
    "conv2d": Emitter(_conv, FLOAT, _conv_check),
    "gemm": Emitter(_gemm, FLOAT, _gemm_check),
    "batch_norm": Emitter(_batch_norm, FLOAT, _same_float_inputs),
    "layer_norm": Emitter(_layer_norm, FLOAT, _layer_norm_check),
    "softmax": Emitter(_softmax, FLOAT),
    "pool2d": Emitter(_pool, FLOAT, _pool_check, frozenset({"max", "avg", "adaptive_avg"})),
    "reduce": Emitter(
        _reduce, FLOAT, _reduce_check, frozenset({"sum", "mean", "max", "min", "argmax", "argmin"})
    ),
}
