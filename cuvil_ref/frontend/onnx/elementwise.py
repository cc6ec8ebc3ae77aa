"""Converters for ONNX's elementwise ops: unary math, activations, binary arithmetic with
multidirectional (numpy) broadcasting, comparisons, logic, ``Where``, ``Clip``, ``Cast``.

ONNX semantics that differ from torch's and are kept here: ``Div`` on integers truncates toward
zero; ``Mod`` follows the divisor's sign unless ``fmod=1``; ``Pow`` returns the base's type;
``Max``/``Min``/``Sum``/``Mean`` are variadic; ``Clip`` bounds are inputs from version 11.
Unary ops whose IR op another family declares are claimed only when that op is registered.
"""

from __future__ import annotations

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


@onnx_op(TABLE, "Cast", 6, 9, 13, 19, 21, 23, 24, 25)
def cast(cx: OnnxContext, node: OnnxNode) -> Value:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    return cx.cast(x_of(node), dtype_of(int(node.attr("to")), "Cast's 'to'"))


@onnx_op(TABLE, "CastLike", 15, 19, 21, 23, 24, 25)
def cast_like(cx: OnnxContext, node: OnnxNode) -> Value:
    target = node.inputs[1]
    assert target is not None
    return cx.cast(x_of(node), target.type.dtype)


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


# -- activations with ONNX's formulas ----------------------------------------------------------


def _f(cx: OnnxContext, x: Value, value: float) -> Value:
    return cx.scalar(value, x.type.dtype)


@onnx_op(TABLE, "LeakyRelu", 6, 16)
def leaky_relu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("leaky_relu", [x_of(node)], negative_slope=float(node.attr("alpha", 0.01)))


@onnx_op(TABLE, "Elu", 6, 22)
def elu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("elu", [x_of(node)], alpha=float(node.attr("alpha", 1.0)))


@onnx_op(TABLE, "Selu", 6, 22)
def selu(cx: OnnxContext, node: OnnxNode) -> Value:
    """``gamma * (x if x > 0 else alpha * (e^x - 1))`` = ``gamma * elu(x, alpha)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    return cx.op("mul", [cx.op("elu", [x], alpha=alpha), _f(cx, x, gamma)])


@onnx_op(TABLE, "Celu", 12)
def celu(cx: OnnxContext, node: OnnxNode) -> Value:
    """``max(0, x) + min(0, alpha * (e^(x/alpha) - 1))`` = ``alpha * elu(x / alpha)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.0))
    inner = cx.op("elu", [cx.op("div", [x, _f(cx, x, alpha)])], alpha=1.0)
    return cx.op("mul", [inner, _f(cx, x, alpha)])


@onnx_op(TABLE, "HardSigmoid", 6, 22)
def hard_sigmoid(cx: OnnxContext, node: OnnxNode) -> Value:
    """``max(0, min(1, alpha * x + beta))``."""
    x = x_of(node)
    alpha, beta = float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    y = cx.op("add", [cx.op("mul", [x, _f(cx, x, alpha)]), _f(cx, x, beta)])
    return cx.op("clamp", [y], min=0.0, max=1.0)


@onnx_op(TABLE, "HardSwish", 14, 22)
def hard_swish(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""
    x = x_of(node)
    y = cx.op("add", [cx.op("mul", [x, _f(cx, x, 1 / 6)]), _f(cx, x, 0.5)])
    return cx.op("mul", [x, cx.op("clamp", [y], min=0.0, max=1.0)])


@onnx_op(TABLE, "Softsign", 1, 22)
def softsign(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    return cx.op("div", [x, cx.op("add", [cx.op("abs", [x]), _f(cx, x, 1.0)])])


@onnx_op(TABLE, "Softplus", 1, 22)
def softplus(cx: OnnxContext, node: OnnxNode) -> Value:
    """``ln(e^x + 1)``, computed stably as ``max(x, 0) + ln(1 + e^-|x|)``."""
    x = x_of(node)
    e = cx.op("exp", [cx.op("neg", [cx.op("abs", [x])])])
    tail = cx.op("log", [cx.op("add", [e, _f(cx, x, 1.0)])])
    return cx.op("add", [cx.op("relu", [x]), tail])


@onnx_op(TABLE, "ThresholdedRelu", 10, 22)
def thresholded_relu(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    keep = cx.op("gt", [x, _f(cx, x, float(node.attr("alpha", 1.0)))])
    return cx.op("where", [keep, x, _f(cx, x, 0.0)])


@onnx_op(TABLE, "Shrink", 9)
def shrink(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, else 0 (any numeric type)."""
    x = x_of(node)
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    dt = x.type.dtype
    low = cx.op("lt", [x, cx.scalar(-lambd, dt)])
    high = cx.op("gt", [x, cx.scalar(lambd, dt)])
    if dt.is_float:
        lo_v = cx.op("add", [x, cx.scalar(bias, dt)])
        hi_v = cx.op("sub", [x, cx.scalar(bias, dt)])
    else:  # integer tensors: compute in f64, ONNX casts the result back
        xf = cx.cast(x, DType.f64)
        lo_v = cx.cast(cx.op("add", [xf, cx.scalar(bias, DType.f64)]), dt)
        hi_v = cx.cast(cx.op("sub", [xf, cx.scalar(bias, DType.f64)]), dt)
    zero = cx.scalar(0, dt)
    return cx.op("where", [low, lo_v, cx.op("where", [high, hi_v, zero])])


@onnx_op(TABLE, "PRelu", 7, 9, 16)
def prelu(cx: OnnxContext, node: OnnxNode) -> Value:
    x, slope = node.inputs[0], node.inputs[1]
    assert x is not None and slope is not None
    neg = cx.op("lt", [x, cx.scalar(0, x.type.dtype)])
    return cx.op("where", [neg, cx.op("mul", [x, slope]), x])


@onnx_op(TABLE, "Gelu", 20)
def gelu(cx: OnnxContext, node: OnnxNode) -> Value:
    return cx.op("gelu", [x_of(node)], approximate=str(node.attr("approximate", "none")))


@onnx_op(TABLE, "Swish", 24)
def swish(cx: OnnxContext, node: OnnxNode) -> Value:
    """``x * sigmoid(alpha * x)``."""
    x = x_of(node)
    alpha = float(node.attr("alpha", 1.0))
    return cx.op("mul", [x, cx.op("sigmoid", [cx.op("mul", [x, _f(cx, x, alpha)])])])


__all__ = ["BINARY", "TABLE", "UNARY"]
