"""Lowerings onto the elementwise chain kernel: unary ops, binary ops, ``fused_elementwise`` and
the byte copies that implement reshape-like ops.

Binary operands must have the output's shape; a constant operand of another shape is broadcast
on the host once (at lowering) and uploaded as a device constant. A runtime operand that would
need broadcasting is declined. f16/bf16 chains of several steps are declined: the kernel rounds
once at the end while the interpreter rounds after every step.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_hip.kernels.elementwise import Step, elementwise_source
from cuvil_kernels_hip.lowerings.common import (
    FLOAT_STORAGE,
    LowerContext,
    Lowering,
    first_reason,
    float_reason,
    grid_1d,
    i64,
    numel,
    same_dtype_reason,
    storage,
)
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.ops.fused import parse_program

#: IR unary op -> chain step name (gelu is handled by its ``approximate`` attribute).
UNARY_STEPS = {
    "neg": "neg",
    "abs": "abs",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "erf": "erf",
    "relu": "relu",
    "relu6": "relu6",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "silu": "silu",
    "hardswish": "hardswish",
}
BINARY_STEPS = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "pow": "pow",
    "maximum": "max",
    "minimum": "min",
}
COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})
COPY_OPS = ("reshape", "flatten", "squeeze", "unsqueeze")


def _unary_step(op: str, attrs: object) -> str | None:
    if op == "gelu":
        approx = attrs["approximate"]  # type: ignore[index]
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approx)
    return UNARY_STEPS.get(op)


def _emit_chain(node: Node, ctx: LowerContext, steps: tuple[Step, ...], inputs: list[str]) -> None:
    out = node.outputs[0]
    n = numel(ctx.shape(out))
    src = elementwise_source(steps, len(inputs), storage(out), ctx.options)
    block = ctx.options.block_size
    grid = grid_1d(n, block, ctx.options.loop_unroll_factor)
    ctx.launch(src, grid, (block, 1, 1), (*inputs, out.name, i64(n)))


# --- unary ----------------------------------------------------------------------------------------


def check_unary(node: Node, graph: Graph) -> str | None:
    if _unary_step(node.op, node.attrs) is None:
        return f"gelu approximate={node.attrs.get('approximate')!r} has no hip kernel"
    return first_reason(float_reason(node), same_dtype_reason(node))


def lower_unary(node: Node, ctx: LowerContext) -> None:
    step = _unary_step(node.op, node.attrs)
    assert step is not None
    _emit_chain(node, ctx, ((step, None),), [node.inputs[0].name])


# --- binary ---------------------------------------------------------------------------------------


def check_binary(node: Node, graph: Graph) -> str | None:
    out_shape = node.outputs[0].type.shape
    for v in node.inputs:
        if v.type.shape != out_shape and v.name not in graph.constants:
            return (
                f"operand %{v.name} [{', '.join(map(str, v.type.shape))}] would need a runtime "
                "broadcast; the hip elementwise kernel needs equal shapes (constants are "
                "broadcast at compile time)"
            )
    return first_reason(float_reason(node, *node.inputs, *node.outputs), same_dtype_reason(node))


def lower_binary(node: Node, ctx: LowerContext) -> None:
    out = node.outputs[0]
    shape = ctx.shape(out)
    names = []
    for i, v in enumerate(node.inputs):
        array = ctx.const(v)
        if array is not None and tuple(array.shape) != shape:
            wide = np.broadcast_to(array, shape).astype(out.type.dtype.numpy)
            names.append(ctx.add_constant(node, f"bcast{i}", wide))
        else:
            names.append(v.name)
    _emit_chain(node, ctx, ((BINARY_STEPS[node.op], 1),), names)


# --- fused_elementwise ----------------------------------------------------------------------------


def _program_steps(node: Node) -> tuple[tuple[Step, ...] | None, str | None]:
    """(chain steps, None) or (None, reason)."""
    steps: list[Step] = []
    dtype = node.inputs[0].type.dtype
    for op, attrs, scalar in parse_program(node.attrs["program"]):
        if scalar is None:
            step = _unary_step(op, attrs)
            if step is None or (op != "gelu" and attrs):
                return None, f"step {op}({dict(attrs)}) has no hip chain kernel"
            steps.append((step, None))
            continue
        value, scalar_dtype, side = scalar
        if op not in BINARY_STEPS:
            return None, f"scalar step {op} has no hip chain kernel"
        if side == "lhs" and op not in COMMUTATIVE:
            return None, f"step {op}(lhs=...) puts the scalar first; only x op scalar is generated"
        if DType(scalar_dtype) != dtype:
            return None, f"scalar dtype {scalar_dtype} differs from the chain's {dtype.value}"
        rounded = float(np.array(value, dtype=dtype.numpy).astype(np.float32))
        steps.append((BINARY_STEPS[op], rounded))
    return tuple(steps), None


def check_fused_elementwise(node: Node, graph: Graph) -> str | None:
    reason = first_reason(float_reason(node), same_dtype_reason(node))
    if reason:
        return reason
    steps, reason = _program_steps(node)
    if reason:
        return reason
    assert steps is not None
    if len(steps) > 1 and node.inputs[0].type.dtype != DType.f32:
        return (
            f"a {len(steps)}-step {node.inputs[0].type.dtype.value} chain: the kernel rounds "
            "once, the interpreter after every step"
        )
    return None


def lower_fused_elementwise(node: Node, ctx: LowerContext) -> None:
    steps, _ = _program_steps(node)
    assert steps is not None
    _emit_chain(node, ctx, steps, [node.inputs[0].name])


# --- reshape-like copies --------------------------------------------------------------------------


def check_copy(node: Node, graph: Graph) -> str | None:
    out = node.outputs[0]
    nbytes = numel(tuple(int(d) for d in out.type.shape)) * out.type.dtype.itemsize
    if nbytes % 4:
        return f"a copy of {nbytes} bytes: the hip copy kernel moves whole 32-bit words"
    return None


def lower_copy(node: Node, ctx: LowerContext) -> None:
    """A bitwise copy as a float32 identity chain over 32-bit words (no arithmetic: exact)."""
    out = node.outputs[0]
    words = numel(ctx.shape(out)) * out.type.dtype.itemsize // 4
    src = elementwise_source((("identity", None),), 1, "float32", ctx.options)
    block = ctx.options.block_size
    grid = grid_1d(words, block, ctx.options.loop_unroll_factor)
    ctx.launch(src, grid, (block, 1, 1), (node.inputs[0].name, out.name, i64(words)))


LOWERINGS: dict[str, Lowering] = {
    **{op: Lowering(check_unary, lower_unary) for op in (*UNARY_STEPS, "gelu")},
    **{op: Lowering(check_binary, lower_binary) for op in BINARY_STEPS},
    "fused_elementwise": Lowering(check_fused_elementwise, lower_fused_elementwise),
    **{op: Lowering(check_copy, lower_copy) for op in COPY_OPS},
}

__all__ = ["FLOAT_STORAGE", "LOWERINGS"]
