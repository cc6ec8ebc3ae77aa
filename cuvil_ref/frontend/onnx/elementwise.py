"""Converters for ONNX's elementwise ops: unary math, activations, binary arithmetic with
multidirectional (numpy) broadcasting, comparisons, logic, ``Where``, ``Clip``, ``Cast``.

ONNX semantics that differ from torch's and are kept here: ``Div`` on integers truncates toward
zero; ``Mod`` follows the divisor's sign unless ``fmod=1``; ``Pow`` returns the base's type;
``Max``/``Min``/``Sum``/``Mean`` are variadic; ``Clip`` bounds are inputs from version 11.
Unary ops whose IR op another family declares are claimed only when that op is registered.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops import REGISTRY

TABLE: dict[str, OnnxConverter] = {}

#: ONNX unary op -> (IR op, operator versions).
UNARY: dict[str, tuple[str, tuple[int, ...]]] = {
    "Abs": ("abs", (6, 13)),
    "Neg": ("neg", (6, 13)),
    "Exp": ("exp", (6, 13)),
    "Log": ("log", (6, 13)),
    "Sqrt": ("sqrt", (6, 13)),
    "Erf": ("erf", (9, 13)),
    "Sigmoid": ("sigmoid", (6, 13)),
    "Tanh": ("tanh", (6, 13)),
    "Relu": ("relu", (6, 13, 14)),
    "Not": ("logical_not", (1,)),
    "Mish": ("mish", (18, 22)),
    "Sin": ("sin", (7, 22)),
    "Cos": ("cos", (7, 22)),
    "Tan": ("tan", (7, 22)),
    "Asin": ("asin", (7, 22)),
    "Acos": ("acos", (7, 22)),
    "Atan": ("atan", (7, 22)),
    "Sinh": ("sinh", (9, 22)),
    "Cosh": ("cosh", (9, 22)),
    "Asinh": ("asinh", (9, 22)),
    "Acosh": ("acosh", (9, 22)),
    "Atanh": ("atanh", (9, 22)),
    "Floor": ("floor", (6, 13)),
    "Ceil": ("ceil", (6, 13)),
    "Sign": ("sign", (9, 13)),
    "Round": ("round", (11, 22)),
    "BitwiseNot": ("bitwise_not", (18,)),
}

#: ONNX binary op -> (IR op, operator versions); inputs broadcast as numpy does.
BINARY: dict[str, tuple[str, tuple[int, ...]]] = {
    "Add": ("add", (7, 13, 14)),
    "Sub": ("sub", (7, 13, 14)),
    "Mul": ("mul", (7, 13, 14)),
    "Equal": ("eq", (7, 11, 13, 19)),
    "Less": ("lt", (7, 9, 13)),
    "Greater": ("gt", (7, 9, 13)),
    "LessOrEqual": ("le", (12, 16)),
    "GreaterOrEqual": ("ge", (12, 16)),
    "And": ("logical_and", (7,)),
    "Or": ("logical_or", (7,)),
    "Xor": ("logical_xor", (7,)),
    "BitwiseAnd": ("bitwise_and", (18,)),
    "BitwiseOr": ("bitwise_or", (18,)),
    "BitwiseXor": ("bitwise_xor", (18,)),
}


def _unary(ir_op: str):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        return cx.op(ir_op, [node.inputs[0]])  # type: ignore[list-item]

    return convert


def _binary(ir_op: str):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        return cx.op(ir_op, [node.inputs[0], node.inputs[1]])  # type: ignore[list-item]

    return convert


for _onnx, (_ir, _versions) in UNARY.items():
    if _ir in REGISTRY:
        onnx_op(TABLE, _onnx, *_versions)(_unary(_ir))
for _onnx, (_ir, _versions) in BINARY.items():
    if _ir in REGISTRY:
        onnx_op(TABLE, _onnx, *_versions)(_binary(_ir))


def x_of(node: OnnxNode) -> Value:
    x = node.inputs[0]
    assert x is not None
    return x


@onnx_op(TABLE, "Identity", 1, 13, 14, 16, 19, 21, 23, 24, 25)
def identity(cx: OnnxContext, node: OnnxNode) -> Value:
    return x_of(node)


@onnx_op(TABLE, "Reciprocal", 6, 13)
def reciprocal(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("div", [cx.scalar(1, x.type.dtype), x])


@onnx_op(TABLE, "Div", 7, 13, 14)
def div(cx: OnnxContext, node: OnnxNode) -> Value:
    """Float division; integer division truncates toward zero (C semantics), as ONNX says."""
    a, b = node.inputs[0], node.inputs[1]
    assert a is not None and b is not None
    if a.type.dtype.is_float:
        return cx.op("div", [a, b])
    ka, kb = cx.array(a), cx.array(b)
    if ka is not None and kb is not None:  # shape arithmetic: fold with C division here
        if np.any(kb == 0):
            raise cx.error("integer division by zero")
        q = np.floor_divide(ka, kb)
        q = q + ((np.remainder(ka, kb) != 0) & ((ka < 0) != (kb < 0))).astype(q.dtype)
        return cx.constant(q.astype(a.type.dtype.numpy), "div")
    if "trunc_divide" not in REGISTRY:
        raise cx.error("integer Div needs the IR op 'trunc_divide', which is not registered")
    return cx.op("trunc_divide", [a, b])


@onnx_op(TABLE, "Mod", 10, 13)
def mod(cx: OnnxContext, node: OnnxNode) -> Value:
    """``fmod=0``: the remainder takes the divisor's sign (Python's ``%``, integers only);
    ``fmod=1``: C ``fmod``, the dividend's sign."""
    a, b = node.inputs[0], node.inputs[1]
    assert a is not None and b is not None
    fmod = int(node.attr("fmod", 0))
    if not fmod and a.type.dtype.is_float:
        raise cx.error("Mod on floats requires fmod=1 (the ONNX spec)")
    ka, kb = cx.array(a), cx.array(b)
    if ka is not None and kb is not None:  # shape arithmetic: fold here
        if not a.type.dtype.is_float and np.any(kb == 0):
            raise cx.error("integer modulo by zero")
        with np.errstate(all="ignore"):
            r = np.fmod(ka, kb) if fmod else np.remainder(ka, kb)
        return cx.constant(np.asarray(r, dtype=a.type.dtype.numpy), "mod")
    ir_op = "fmod" if fmod else "remainder"
    if ir_op not in REGISTRY:
        raise cx.error(f"Mod needs the IR op '{ir_op}', which is not registered")
    return cx.op(ir_op, [a, b])


@onnx_op(TABLE, "Pow", 7, 12, 13, 15)
def pow_(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x ^ y`` in the base's type (the exponent may be another type)."""
    x, y = node.inputs[0], node.inputs[1]
    assert x is not None and y is not None
    dtype = x.type.dtype
    if dtype.is_float:
        return cx.op("pow", [x, cx.cast(y, dtype)])
    # integer base: compute in f64 (exact for the integer results ONNX's own tests expect)
    out = cx.op("pow", [cx.cast(x, DType.f64), cx.cast(y, DType.f64)])
    return cx.cast(out, dtype)


def _variadic(ir_op: str, mean: bool = False):  # type: ignore[no-untyped-def]
    def convert(cx: OnnxContext, node: OnnxNode) -> Value:
        xs = [v for v in node.inputs if v is not None]
        acc = xs[0]
        for v in xs[1:]:
            acc = cx.op(ir_op, [acc, v])
        if mean:
            acc = cx.op("div", [acc, cx.scalar(len(xs), acc.type.dtype)])
        return acc

    return convert


onnx_op(TABLE, "Max", 6, 8, 12, 13)(_variadic("maximum"))
onnx_op(TABLE, "Min", 6, 8, 12, 13)(_variadic("minimum"))
onnx_op(TABLE, "Sum", 6, 8, 13)(_variadic("add"))
onnx_op(TABLE, "Mean", 6, 8, 13)(_variadic("add", mean=True))


@onnx_op(TABLE, "Where", 9, 16)
def where(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("where", list(node.inputs))  # type: ignore[arg-type]


@onnx_op(TABLE, "Clip", 6, 11, 12, 13)
def clip(cx: OnnxContext, node: OnnxNode) -> Value:
    """``min(max(x, lo), hi)``: bounds are attributes up to version 6, optional inputs after."""
    x = x_of(node)
    if node.version < 11:
        lo: Value | None = cx.scalar(node.attr("min", -3.4028234663852886e38), x.type.dtype)
        hi: Value | None = cx.scalar(node.attr("max", 3.4028234663852886e38), x.type.dtype)
    else:
        lo, hi = node.input(1), node.input(2)
    if lo is not None:
        x = cx.op("maximum", [x, lo])
    if hi is not None:
        x = cx.op("minimum", [x, hi])
    return x


def onnx_cast(cx: OnnxContext, node: OnnxNode, x: Value, to: DType) -> Value:
    """ONNX's Cast: to a float8/float4 type, ``saturate=1`` (the default) clamps to the format's
    largest finite value first (infinities included); float8e8m0 rounds ``round_mode`` (up,
    down, nearest) to a power of two."""
    if not to.is_storage or not to.is_float or x.type.dtype == to:
        return cx.cast(x, to)
    exact = x.type.dtype in (DType.f32, DType.f64) or (
        to != DType.f8e8m0 and x.type.dtype.is_float and not x.type.dtype.is_storage
    )
    src = x if exact else cx.cast(x, DType.f32)
    if int(node.attr("saturate", 1)):
        info = ml_dtypes.finfo(to.numpy)
        # float8e8m0 (powers of two, no zero or sign) saturates at its smallest value too
        low = float(info.tiny) if to == DType.f8e8m0 else -float(info.max)
        src = cx.op("clamp", [src], min=low, max=float(info.max))
    mode = str(node.attr("round_mode", "up"))
    if to != DType.f8e8m0 or mode == "nearest":
        return cx.cast(src, to)
    if mode not in ("up", "down"):
        raise cx.error(f"round_mode {mode!r} is not up, down or nearest")
    near = cx.cast(cx.cast(src, to), src.type.dtype)  # a power of two near x
    off = cx.op("lt" if mode == "up" else "gt", [near, src])
    step = cx.scalar(2.0 if mode == "up" else 0.5, src.type.dtype)
    return cx.cast(cx.op("where", [off, cx.op("mul", [near, step]), near]), to)


@onnx_op(TABLE, "Cast", 6, 9, 13, 19, 21, 23, 24, 25)
def cast(cx: OnnxContext, node: OnnxNode) -> Value:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    return onnx_cast(cx, node, x_of(node), dtype_of(int(node.attr("to")), "Cast's 'to'"))


@onnx_op(TABLE, "CastLike", 15, 19, 21, 23, 24, 25)
def cast_like(cx: OnnxContext, node: OnnxNode) -> Value:
    target = node.inputs[1]
    assert target is not None
    return onnx_cast(cx, node, x_of(node), target.type.dtype)


@onnx_op(TABLE, "IsNaN", 9, 13, 20)
def isnan(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("isnan", [x_of(node)])


@onnx_op(TABLE, "IsInf", 10, 20)
def isinf(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    inf = cx.op("isinf", [x])
    neg, pos = int(node.attr("detect_negative", 1)), int(node.attr("detect_positive", 1))
    if neg and pos:
        return inf
    zero = cx.scalar(0, x.type.dtype)
    if not neg and not pos:
        return cx.op("logical_and", [inf, cx.constant(np.zeros((), bool))])
    side = cx.op("gt" if pos else "lt", [x, zero])
    return cx.op("logical_and", [inf, side])


def bit_shift(cx: OnnxContext, node: OnnxNode) -> Value:
    """Unsigned shifts as arithmetic: ``x << y = x * 2^y`` (wrapping, so bits shifted out are
    lost) and ``x >> y = floor(x / 2^y)``."""
    x, y = node.inputs[0], node.inputs[1]
    assert x is not None and y is not None
    if x.type.dtype.is_float or x.type.dtype.value[0] != "u":
        raise cx.error(f"BitShift of a {x.type.dtype.value} tensor: ONNX shifts unsigned ints")
    power = cx.op("pow", [cx.scalar(2, x.type.dtype), cx.cast(y, x.type.dtype)])
    direction = str(node.attr("direction", ""))
    if direction == "LEFT":
        return cx.op("mul", [x, power])
    if direction == "RIGHT":
        return cx.op("floor_divide", [x, power])
    raise cx.error(f"BitShift direction {direction!r} is not LEFT or RIGHT")


# the IR's floor_divide came with exact integer pow (the node tests check both)
if "floor_divide" in REGISTRY:
    onnx_op(TABLE, "BitShift", 11)(bit_shift)


__all__ = ["BINARY", "TABLE", "UNARY"]
