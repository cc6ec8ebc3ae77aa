"""Emitters for the elementwise chain kernel: the ``unary``, ``binary``, ``chain`` and ``view``
template families (``cuvil_ref.plugin.kit.templates``).

A view shares its input's bytes in the memory plan, so it needs no launch; only a view of a
value outside the arena (a partition input or constant) is copied.

Binary operands must have the output's shape; a constant operand of another shape is broadcast
on the host once (at lowering) and uploaded as a device constant. A runtime operand that would
need broadcasting is declined. f16/bf16 chains of several steps are declined: the kernel rounds
once at the end while the interpreter rounds after every step.
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_hip.kernels.elementwise import BINARY, UNARY, Step, elementwise_source
from cuvil_kernels_hip.lowerings.common import (
    LowerContext,
    first_reason,
    float_reason,
    grid_1d,
    i64,
    numel,
    same_dtype_reason,
    storage,
)
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import families
from cuvil_ref.ops.fused_elementwise import parse_program
from cuvil_ref.plugin.kit import CheckContext
from cuvil_ref.plugin.kit.templates import TEMPLATES, Emitter


def _unary_step(op: str, attrs: object) -> str | None:
    """The chain kernel's formula for unary op ``op`` (gelu by its ``approximate``), if any."""
    template = TEMPLATES.get(op)
    if template is None or template.family != "unary":
        return None
    step = template.formula
    if op == "gelu":
        step = {"none": "gelu", "tanh": "gelu_tanh"}.get(attrs["approximate"], "")  # type: ignore[index]
    return step if step in UNARY else None


def _binary_step(op: str) -> str | None:
    template = TEMPLATES.get(op)
    if template is None or template.family != "binary" or template.formula not in BINARY:
        return None
    return template.formula


def _emit_chain(node: Node, ctx: LowerContext, steps: tuple[Step, ...], inputs: list[str]) -> None:
    out = node.outputs[0]
    n = numel(ctx.shape(out))
    src = elementwise_source(steps, len(inputs), storage(out), ctx.options)
    block = ctx.options.block_size
    grid = grid_1d(n, block, ctx.options.loop_unroll_factor)
    ctx.launch(src, grid, (block, 1, 1), (*inputs, out.name, i64(n)))


# --- unary ----------------------------------------------------------------------------------------


def check_unary(node: Node, cx: CheckContext) -> str | None:
    if _unary_step(node.op, node.attrs) is None:
        return f"gelu approximate={node.attrs.get('approximate')!r} has no hip kernel"
    return first_reason(float_reason(node), same_dtype_reason(node))


def lower_unary(node: Node, ctx: LowerContext) -> None:
    step = _unary_step(node.op, node.attrs)
    assert step is not None
    _emit_chain(node, ctx, ((step, None),), [node.inputs[0].name])


# --- binary ---------------------------------------------------------------------------------------


def check_binary(node: Node, cx: CheckContext) -> str | None:
    out_shape = node.outputs[0].type.shape
    for v in node.inputs:
        if v.type.shape != out_shape and v.name not in cx.graph.constants:
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
    _emit_chain(node, ctx, ((_binary_step(node.op), 1),), names)


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
        binary = _binary_step(op)
        if binary is None:
            return None, f"scalar step {op} has no hip chain kernel"
        if side == "lhs" and op not in families.COMMUTATIVE:
            return None, f"step {op}(lhs=...) puts the scalar first; only x op scalar is generated"
        if DType(scalar_dtype) != dtype:
            return None, f"scalar dtype {scalar_dtype} differs from the chain's {dtype.value}"
        rounded = float(np.array(value, dtype=dtype.numpy).astype(np.float32))
        steps.append((binary, rounded))
    return tuple(steps), None


def check_fused_elementwise(node: Node, cx: CheckContext) -> str | None:
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


# --- views ---------------------------------------------------------------------------------------


def check_view(node: Node, cx: CheckContext) -> str | None:
    out = node.outputs[0]
    nbytes = numel(tuple(int(d) for d in out.type.shape)) * out.type.dtype.itemsize
    if nbytes % 4:
        return f"a copy of {nbytes} bytes: the hip copy kernel moves whole 32-bit words"
    return None


def lower_view(node: Node, ctx: LowerContext) -> None:
    """No launch when the plan gives the view its input's bytes; otherwise a bitwise copy as a
    float32 identity chain over 32-bit words (no arithmetic: exact)."""
    out = node.outputs[0]
    if ctx.memory.buffers[out.name].view_of is not None:
        return
    words = numel(ctx.shape(out)) * out.type.dtype.itemsize // 4
    src = elementwise_source((("identity", None),), 1, "float32", ctx.options)
    block = ctx.options.block_size
    grid = grid_1d(words, block, ctx.options.loop_unroll_factor)
    ctx.launch(src, grid, (block, 1, 1), (node.inputs[0].name, out.name, i64(words)))


EMITTERS: dict[str, Emitter] = {
    "unary": Emitter(lower_unary, check=check_unary, formulas=frozenset({*UNARY, "gelu"})),
    "binary": Emitter(lower_binary, check=check_binary, formulas=frozenset(BINARY)),
    "chain": Emitter(lower_fused_elementwise, check=check_fused_elementwise),
    "view": Emitter(lower_view, check=check_view),
}
