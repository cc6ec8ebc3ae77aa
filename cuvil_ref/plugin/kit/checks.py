"""Legality checks packs share. Each returns the reason to decline, or None when the node is fine.

Two shapes: the ``Check``-shaped ones (``check(node, cx)``) can be listed in
``KernelPack(checks=...)`` to run on every node before the op's own check; the others are
helpers an op's check calls with what it knows (``symmetric_padding(node)``,
``dtypes_in(node, FLOATS)``). Combine several with :func:`first_reason`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node, Value
from cuvil_ref.plugin.kit.lowering import CheckContext

FLOATS: frozenset[DType] = frozenset({DType.f32, DType.f16, DType.bf16})
INT8: frozenset[DType] = frozenset({DType.i8})
INT32_LIMIT = 2**31


def first_reason(*reasons: str | None) -> str | None:
    """The first non-empty reason, or None."""
    return next((r for r in reasons if r), None)


def _names(dtypes: Iterable[DType]) -> str:
    return ", ".join(sorted(d.value for d in dtypes))


# --- checks for every node (Check-shaped) --------------------------------------------------------


def static_shapes(node: Node, cx: CheckContext | None = None) -> str | None:
    """Declines a node with a symbolic dim in any input or output."""
    for v in (*node.inputs, *node.outputs):
        for d in v.type.shape:
            if not isinstance(d, int):
                return (
                    f"symbolic dim {d!r} in %{v.name}: the kernels are planned for static shapes; "
                    "compile with a concrete input shape"
                )
    return None


def nonempty(node: Node, cx: CheckContext | None = None) -> str | None:
    """Declines a node with a zero-size input or output (for targets whose programs would wait
    forever for data that never comes; the reference handles empty tensors)."""
    for v in (*node.inputs, *node.outputs):
        if any(d == 0 for d in v.type.shape):
            return f"{node.op}: zero-size tensor {v.type} (nothing for the kernel to compute)"
    return None


def single_output(node: Node, cx: CheckContext | None = None) -> str | None:
    """Declines a node with several outputs."""
    if len(node.outputs) != 1:
        return f"op '{node.op}' with {len(node.outputs)} outputs has no kernel here"
    return None


def no_dtype(*dtypes: DType) -> Callable[[Node, CheckContext], str | None]:
    """A check declining any node that reads or writes one of ``dtypes``."""
    banned = frozenset(dtypes)

    def check(node: Node, cx: CheckContext) -> str | None:
        for v in (*node.inputs, *node.outputs):
            if v.type.dtype in banned:
                return f"dtype {v.type.dtype.value} of %{v.name} is not supported"
        return None

    return check


def integer_only(node: Node, cx: CheckContext | None = None) -> str | None:
    """Declines float nodes (quantize/dequantize included): for integer-only targets."""
    if any(v.type.dtype.is_float for v in (*node.inputs, *node.outputs)):
        return "float op: runs on ref (this target computes on integers only)"
    return None


# --- helpers an op's check calls -----------------------------------------------------------------


def dtypes_in(node: Node, allowed: frozenset[DType], *values: Value) -> str | None:
    """Every value (default: the first input and the outputs) has a dtype in ``allowed``."""
    for v in values or (node.inputs[0], *node.outputs):
        if v.type.dtype not in allowed:
            return (
                f"dtype {v.type.dtype.value} of %{v.name}: the '{node.op}' kernel takes "
                f"{_names(allowed)}"
            )
    return None


def same_dtype(node: Node, *values: Value) -> str | None:
    """Every value (default: all inputs and outputs) has one dtype."""
    dtypes = {v.type.dtype for v in (values or (*node.inputs, *node.outputs))}
    if len(dtypes) > 1:
        return f"{node.op}: mixed dtypes {_names(dtypes)} (one storage dtype per kernel)"
    return None


def rank(node: Node, expected: int, index: int = 0) -> str | None:
    """Input ``index`` has rank ``expected``."""
    got = node.inputs[index].type.rank
    if got != expected:
        name = node.inputs[index].name
        return f"{node.op}: input %{name} has rank {got}, the kernel takes {expected}"
    return None


def nchw(node: Node) -> str | None:
    """A 4-D NCHW input (neither a ``data_layout`` attribute nor the value's layout says NHWC)."""
    layout = node.attrs.get("data_layout", None) or node.inputs[0].type.layout or "NCHW"
    if layout != "NCHW":
        return f"{node.op}: layout {layout} (the kernels are NCHW)"
    return rank(node, 4)


def symmetric_padding(node: Node, max_pad: int | None = None) -> tuple[int, int] | str:
    """``(ph, pw)`` of a 2- or 4-entry ``padding`` (top, left, bottom, right) that pads each axis
    the same on both sides, or the reason it is not."""
    p = tuple(int(v) for v in node.attrs["padding"])
    if len(p) == 2:
        p = (p[0], p[1], p[0], p[1])
    if len(p) != 4:
        return f"{node.op}: padding {p} must have 2 or 4 entries"
    if min(p) < 0:
        return f"{node.op}: negative padding {p} is not supported"
    if p[0] != p[2] or p[1] != p[3]:
        return f"{node.op}: asymmetric padding {p} (top, left, bottom, right) is not supported"
    if max_pad is not None and max(p) > max_pad:
        return f"{node.op}: padding {p} exceeds {max_pad} per side"
    return p[0], p[1]


def padding_reason(node: Node, max_pad: int | None = None) -> str | None:
    """:func:`symmetric_padding` as a check."""
    pads = symmetric_padding(node, max_pad)
    return pads if isinstance(pads, str) else None


def pool_window(node: Node) -> str | None:
    """Symmetric padding of at most half the kernel on a rank-4 input (what pool kernels that
    never see an all-padding window need)."""
    pads = symmetric_padding(node)
    if isinstance(pads, str):
        return pads
    kernel = tuple(node.attrs["kernel"])
    if len(kernel) != 2 or pads[0] > kernel[0] // 2 or pads[1] > kernel[1] // 2:
        return f"{node.op}: padding {pads} larger than half the kernel {kernel} is not supported"
    return rank(node, 4)


def equal_shapes(node: Node) -> str | None:
    """Every input has the output's shape (no broadcasting)."""
    shape = node.outputs[0].type.shape
    for v in node.inputs:
        if v.type.shape != shape:
            return (
                f"{node.op}: %{v.name} [{', '.join(map(str, v.type.shape))}] would be broadcast "
                f"to [{', '.join(map(str, shape))}]; the kernel takes equal shapes"
            )
    return None


def per_tensor(node: Node) -> str | None:
    """A quantize/dequantize with one scale (no ``axis``)."""
    if node.attrs.get("axis") is not None:
        axis = node.attrs["axis"]
        return f"{node.op}: per-channel (axis={axis}) is not supported, per-tensor only"
    return None


def constant_inputs(node: Node, cx: CheckContext, indices: Iterable[int], what: str) -> str | None:
    """Inputs ``indices`` (those present) are graph constants (baked into the program)."""
    for i in indices:
        if i < len(node.inputs) and not cx.is_constant(i, node):
            return (
                f"{what} %{node.inputs[i].name} is a runtime value; this target bakes {what}s "
                "into its programs, so it must be a graph constant"
            )
    return None


def int32_accumulation(node: Node, k: int, term: int) -> str | None:
    """``k`` products of at most ``term`` fit an int32 accumulator."""
    if k * term >= INT32_LIMIT:
        return f"{node.op}: K={k}: the int32 accumulator could overflow (K * {term} >= 2**31)"
    return None


def numel(shape: Iterable[int]) -> int:
    return math.prod(int(d) for d in shape)
