"""Lowering of pointwise ops: numpy ufuncs writing into the step's output buffer.

float32 add/sub/mul/div over operands of one shape (or with a scalar) run on the team
(:mod:`cuvil_kernels_cpu.kernels.pointwise`, the same IEEE operations). The rest: pointwise ops
are memory-bound; numpy's SIMD loops run them at memory speed, release the GIL,
and compute exactly what the interpreter computes (the same ufuncs on the same dtypes), so
these results are bit-exact. float32 arithmetic, comparisons and the clamp family call the
ufunc with ``out=``; other dtypes and the remaining activations evaluate the op's registered
reference and copy it into the buffer.

Pointwise ops keep NHWC storage: when a rank-4 operand is stored NHWC, the others are taken
NHWC too (constants are permuted at lowering), so a residual ``add`` between two NHWC convs
costs no transpose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_kernels_cpu.kernels import pointwise
from cuvil_kernels_cpu.lowering.common import ANY, FLOAT, GELU_TANH, INF, attr, dtypes
from cuvil_kernels_cpu.lowering.context import TO_NHWC, LowerContext
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import get_op
from cuvil_ref.plugin.kit import CheckContext

BINARY_UFUNC: dict[str, Callable[..., Any]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
COMPARE_UFUNC: dict[str, Callable[..., Any]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
#: Pointwise ops run through their registered reference (exact by construction).
REFERENCE_OPS = (
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "gelu", "silu",
    "hardswish", "hardsigmoid", "softplus", "elu", "leaky_relu", "mish", "pow", "isnan",
    "isinf", "logical_not", "logical_and", "logical_or", "logical_xor", "cast",
)  # fmt: skip
CLAMPS = ("relu", "relu6", "clamp", "hardtanh")


def check(node: Node, cx: CheckContext) -> str | None:
    if node.op == "gelu" and node.attrs["approximate"] == "tanh":
        return GELU_TANH
    return None


def _bounds(node: Node) -> tuple[float, float]:
    a = node.attrs
    if node.op == "relu":
        return 0.0, INF
    if node.op == "relu6":
        return 0.0, 6.0
    if node.op == "hardtanh":
        return float(a["min_val"]), float(a["max_val"])
    return float(attr(a, "min", -INF)), float(attr(a, "max", INF))


def _operands(node: Node, cx: LowerContext) -> tuple[list[str], bool]:
    """Input buffers, all NHWC-stored when one rank-4 tensor input is (and all can be)."""
    out_rank = node.outputs[0].type.rank
    nhwc = out_rank == 4 and any(cx.bufs[v.name].nhwc for v in node.inputs)
    if nhwc:
        names = []
        for v in node.inputs:
            b = cx.bufs[v.name]
            if b.nhwc:
                names.append(v.name)
            elif b.kind == "const" and b.array is not None and b.array.ndim <= 4:
                arr = b.array.reshape((1,) * (4 - b.array.ndim) + b.array.shape)
                names.append(cx.const_buf(arr.transpose(TO_NHWC), f"{v.name}.nhwc"))
            elif v.type.rank == 4:
                names.append(cx.nhwc(v))
            elif int(np.prod(b.shape, dtype=np.int64)) == 1:
                names.append(v.name)
            else:
                nhwc = False
                break
        if nhwc:
            return names, True
    return [cx.logical(v) for v in node.inputs], False


def lower(node: Node, cx: LowerContext) -> None:
    names, nhwc = _operands(node, cx)
    out = cx.output(node.outputs[0], nhwc=nhwc)
    f32 = all(cx.bufs[n].dtype == np.float32 for n in names) and out.dtype == np.float32
    op = node.op
    if op in pointwise.CODES and f32 and _flat_operands(cx, names, out.shape):
        size = int(np.prod(out.shape, dtype=np.int64))
        flat = [cx.reshaped(n, (max(1, int(np.prod(cx.bufs[n].shape, dtype=np.int64))),))
                for n in names]  # fmt: skip
        cx.add(pointwise.binary_f32, flat, [cx.reshaped(out.name, (size,))], algo="pointwise",
               static=(pointwise.CODES[op],), in_place=True)  # fmt: skip
    elif op in BINARY_UFUNC and f32:
        cx.add(_ufunc2, names, [out.name], algo="numpy", static=(BINARY_UFUNC[op],),
               in_place=True)  # fmt: skip
    elif op in COMPARE_UFUNC and len({cx.bufs[n].dtype for n in names}) == 1:
        cx.add(_ufunc2, names, [out.name], algo="numpy", static=(COMPARE_UFUNC[op],))
    elif op in CLAMPS and f32:
        lo, hi = _bounds(node)
        cx.add(_clamp, names, [out.name], algo="numpy", static=(lo, hi), in_place=True)
    elif op == "where" and _where_flat(cx, names, out.shape):
        size = int(np.prod(out.shape, dtype=np.int64))
        flat = [cx.reshaped(n, (max(1, int(np.prod(cx.bufs[n].shape, dtype=np.int64))),))
                for n in names]  # fmt: skip
        cx.add(pointwise.where_f32, flat, [cx.reshaped(out.name, (size,))], algo="pointwise")
    elif op == "where" and cx.bufs[names[1]].dtype == cx.bufs[names[2]].dtype == out.dtype:
        cx.add(_where, names, [out.name], algo="numpy")
    else:
        ref = get_op(op).reference
        cx.add(_reference, names, [out.name], algo="numpy-ref", static=(ref, dict(node.attrs)),
               in_place=True)  # fmt: skip


def _flat_operands(cx: LowerContext, names: list[str], shape: tuple[int, ...]) -> bool:
    """Whether a binary op is elementwise over flat storage: ``a`` has the output's shape and
    ``b`` too or a single element (no other broadcast)."""
    if len(names) != 2 or cx.bufs[names[0]].shape != tuple(shape):
        return False
    b = cx.bufs[names[1]].shape
    return b == tuple(shape) or int(np.prod(b, dtype=np.int64)) == 1


def _where_flat(cx: LowerContext, names: list[str], shape: tuple[int, ...]) -> bool:
    """Whether ``where(cond, a, b)`` is flat: ``cond`` broadcast over leading axes only (its
    trailing axes are the output's), ``a`` and ``b`` of the output's shape or one element."""
    cond = cx.bufs[names[0]].shape
    if len(cond) > len(shape) or cx.bufs[names[0]].dtype != np.bool_:
        return False
    if any(cx.bufs[n].dtype != np.float32 for n in names[1:]) or len(names) != 3:
        return False
    pad = (1,) * (len(shape) - len(cond)) + tuple(cond)
    lead = 0
    while lead < len(shape) and pad[lead] == 1:
        lead += 1
    if tuple(pad[lead:]) != tuple(shape[lead:]):
        return False
    for n in names[1:]:
        s = cx.bufs[n].shape
        if s != tuple(shape) and int(np.prod(s, dtype=np.int64)) != 1:
            return False
    return True


def _ufunc2(a: np.ndarray, b: np.ndarray, out: np.ndarray, fn: Any) -> None:
    with np.errstate(all="ignore"):
        fn(a, b, out=out)


def _clamp(x: np.ndarray, out: np.ndarray, lo: float, hi: float) -> None:
    # np.maximum/np.minimum as the interpreter: NaN stays NaN; lo > hi gives hi
    if lo != -INF:
        np.maximum(x, np.float32(lo), out=out)
        x = out
    if hi != INF:
        np.minimum(x, np.float32(hi), out=out)
    elif x is not out:
        np.copyto(out, x)


def _where(cond: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, b)
    np.copyto(out, a, where=cond)


def _reference(*arrays: Any) -> None:
    *ins, out, ref, attrs = arrays
    with np.errstate(all="ignore"):
        np.copyto(out, ref(*ins, **attrs), casting="unsafe")


NUMERIC = ANY - dtypes("bool")

#: Reductions: the reference (numpy's own reductions, float sums in float64 as the interpreter
#: specifies), so a model's softmax-free statistics stay inside the cpu partition.
REDUCTIONS = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std")


def lower_reduction(node: Node, cx: LowerContext) -> None:
    names = [cx.logical(v) for v in node.inputs]
    out = cx.output(node.outputs[0])
    ref = get_op(node.op).reference
    cx.add(_reference, names, [out.name], algo="numpy-ref", static=(ref, dict(node.attrs)))


ENTRIES: dict[str, tuple[Any, ...]] = {
    **{op: (lower, NUMERIC, None) for op in BINARY_UFUNC},
    **{op: (lower, ANY, None) for op in COMPARE_UFUNC},
    **{op: (lower, NUMERIC, None) for op in CLAMPS},
    "where": (lower, dtypes("bool"), None),
    **{op: (lower, ANY if op.startswith("logical") or op == "cast" else
            NUMERIC if op in ("neg", "abs") else FLOAT, check)
       for op in REFERENCE_OPS},
    "fused_elementwise": (lower, ANY, None),
    **{op: (lower_reduction, ANY, None) for op in REDUCTIONS},
}  # fmt: skip
