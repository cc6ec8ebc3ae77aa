"""THE mapping from PyTorch to Cuvil ops: every torch target the frontend understands is a key here.

Four tables, one per kind of torch call:

* ``MODULE_TABLE``   — ``nn.Module`` class -> converter(cx, module, path, *args) (fx call_module;
  declared in ``module_table.py``);
* ``FUNCTION_TABLE`` — Python callable (``torch.relu``, ``F.conv2d``, ``operator.add``) -> converter
  (fx call_function);
* ``METHOD_TABLE``   — Tensor method name (``"view"``, ``"chunk"``) -> converter (fx call_method);
* ``ATEN_TABLE``     — ATen op name (``"aten::conv2d"``) -> converter, for ``torch.export``
  graphs at the high ATen level that ``torch.export.export`` yields *without*
  ``run_decompositions()`` (``aten.conv2d``, ``aten.batch_norm``, ``aten.linear``...). We pick
  that level on purpose: it keeps the model's structure (one node per layer) and maps
  one-to-one onto Cuvil's op set.

Converters live in ``functional.py`` and ``shape_functional.py`` and take torch's functional
signatures, so most entries are one word. Anything absent raises :class:`UnsupportedOpError`
(see ``errors.py``), naming the nearest supported alternatives.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend import functional as fn
from cuvil_ref.frontend import shape_functional as sf
from cuvil_ref.frontend.aten import CORE_TABLE
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.module_table import MODULE_TABLE
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]

# --------------------------------------------------------------------------- composites


def scaled_dot_product_attention(
    cx: Converter,
    query: Value,
    key: Value,
    value: Value,
    attn_mask: Value | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Value:
    """softmax(q k^T * scale + mask) v, with the mask boolean (False = masked) or additive."""
    if dropout_p:
        raise CaptureError("scaled_dot_product_attention with dropout_p > 0 needs model.eval()")
    if enable_gqa:
        raise CaptureError("scaled_dot_product_attention with enable_gqa is not supported")
    head = fn.static_dim(query, -1, "attention")
    s = 1.0 / math.sqrt(head) if scale is None else float(scale)
    scores = fn.matmul(cx, query, sf.transpose(cx, key, -2, -1))
    scores = fn.binary(cx, "mul", scores, s)
    if is_causal:
        rows = fn.static_dim(query, -2, "a causal mask")
        cols = fn.static_dim(key, -2, "a causal mask")
        attn_mask = cx.constant(np.tril(np.ones((rows, cols), dtype=bool)), "causal_mask")
    if attn_mask is not None:
        if attn_mask.type.dtype.value == "bool":
            scores = fn.where(cx, attn_mask, scores, float("-inf"))
        else:
            scores = fn.add(cx, scores, attn_mask)
    return fn.matmul(cx, fn.softmax(cx, scores, -1), value)


# --------------------------------------------------------------------------- functions and methods

_UNARY_NAMES = [
    "relu",
    "relu6",
    "sigmoid",
    "tanh",
    "silu",
    "hardswish",
    "hardsigmoid",
    "mish",
    "softsign",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "abs",
    "erf",
]

_COMPARE_NAMES = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]

#: Converters shared by functions, methods and ATen ops, keyed by the torch name.
COMMON: dict[str, Conv] = {
    **{name: fn.unary(name) for name in _UNARY_NAMES},
    "neg": fn.neg,
    "negative": fn.neg,
    "gelu": fn.gelu,
    "hardtanh": fn.hardtanh,
    "leaky_relu": fn.leaky_relu,
    "elu": fn.elu,
    "softplus": fn.softplus,
    "clamp": fn.clamp,
    "clip": fn.clamp,
    "where": fn.where,
    "masked_fill": fn.masked_fill,
    "add": fn.add,
    "sub": fn.sub,
    "subtract": fn.sub,
    "rsub": fn.rsub,
    "mul": fn.binary_op("mul"),
    "multiply": fn.binary_op("mul"),
    "div": fn.div,
    "divide": fn.div,
    "true_divide": fn.div,
    "pow": fn.binary_op("pow"),
    "maximum": fn.binary_op("maximum"),
    "minimum": fn.binary_op("minimum"),
    **{name: fn.binary_op(name) for name in _COMPARE_NAMES},
    "greater": fn.binary_op("gt"),
    "greater_equal": fn.binary_op("ge"),
    "less": fn.binary_op("lt"),
    "less_equal": fn.binary_op("le"),
    "not_equal": fn.binary_op("ne"),
    "logical_not": fn.unary("logical_not"),
    "isnan": fn.unary("isnan"),
    "isinf": fn.unary("isinf"),
    "bitwise_not": fn.invert,
    "__invert__": fn.invert,
    "bitwise_and": fn.bool_op("logical_and"),
    "bitwise_or": fn.bool_op("logical_or"),
    "bitwise_xor": fn.bool_op("logical_xor"),
    "__and__": fn.bool_op("logical_and"),
    "__or__": fn.bool_op("logical_or"),
    "__xor__": fn.bool_op("logical_xor"),
    "argmin": fn.argmin,
    "var": fn.var,
    "std": fn.std,
    "prod": fn.prod,
    "group_norm": fn.group_norm,
    "rms_norm": fn.rms_norm,
    "adaptive_max_pool2d": fn.adaptive_max_pool2d,
    "sum": fn.sum_,
    "mean": fn.mean,
    "amax": fn.amax,
    "amin": fn.amin,
    "argmax": fn.argmax,
    "max": fn.max_,
    "min": fn.min_,
    "softmax": fn.softmax,
    "log_softmax": fn.log_softmax,
    "layer_norm": fn.layer_norm,
    "batch_norm": fn.batch_norm,
    "linear": fn.linear,
    "matmul": fn.matmul,
    "mm": fn.matmul,
    "bmm": fn.matmul,
    "addmm": fn.addmm,
    "conv2d": fn.conv2d,
    "max_pool2d": fn.max_pool2d,
    "avg_pool2d": fn.avg_pool2d,
    "adaptive_avg_pool2d": fn.adaptive_avg_pool2d,
    "pad": fn.pad,
    "constant_pad_nd": fn.pad,
    "dropout": fn.dropout,
    "contiguous": fn.identity,
    "clone": fn.identity,
    "detach": fn.identity,
    "alias": fn.identity,
    "reshape": sf.reshape,
    "view": sf.reshape,
    "flatten": sf.flatten,
    "unflatten": sf.unflatten,
    "permute": sf.permute,
    "transpose": sf.transpose,
    "swapaxes": sf.transpose,
    "t": sf.t,
    "squeeze": sf.squeeze,
    "unsqueeze": sf.unsqueeze,
    "expand": sf.expand,
    "expand_as": sf.expand_as,
    "cat": sf.cat,
    "concat": sf.cat,
    "concatenate": sf.cat,
    "stack": sf.stack,
    "split": sf.split,
    "split_with_sizes": sf.split,
    "chunk": sf.chunk,
    "unbind": sf.unbind,
    "select": sf.select,
    "narrow": sf.narrow,
    "slice": sf.slice_,
    "index_select": sf.index_select,
    "gather": sf.gather,
    "scaled_dot_product_attention": scaled_dot_product_attention,
    "size": sf.size,
    "dim": sf.dim,
    "numel": sf.numel,
}

FUNCTION_TABLE: dict[Any, Conv] = {
    operator.add: fn.add,
    operator.iadd: fn.add,
    operator.sub: fn.sub,
    operator.isub: fn.sub,
    operator.mul: fn.binary_op("mul"),
    operator.imul: fn.binary_op("mul"),
    operator.truediv: fn.div,
    operator.itruediv: fn.div,
    operator.floordiv: fn.floordiv,
    operator.pow: fn.binary_op("pow"),
    operator.neg: fn.neg,
    operator.matmul: fn.matmul,
    operator.getitem: sf.getitem,
    getattr: sf.getattr_,
    F.embedding: sf.embedding,
    torch.embedding: sf.aten_embedding,
    F.relu6: COMMON["relu6"],
    F.dropout: fn.dropout,
    torch.dropout: lambda cx, x, p, train: fn.dropout(cx, x, p, train),
    torch.flatten: sf.flatten,
    F.softmax: fn.softmax,
    torch.max: fn.max_,
}
for _name, _conv in COMMON.items():
    for _namespace in (torch, F, torch.Tensor):
        _target = getattr(_namespace, _name, None)
        if _target is not None and _target not in FUNCTION_TABLE:
            FUNCTION_TABLE[_target] = _conv


def python_call(f: Callable[..., Any]) -> Conv:
    """Plain Python math on sizes and scalars (``math.sqrt(d // h)``), run at capture time."""

    def convert(cx: Converter, *args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, Value) for a in (*args, *kwargs.values())):
            raise CaptureError(f"Python's {f.__name__}() is applied to a tensor; use torch ops")
        return f(*args, **kwargs)

    return convert


for _f in (
    math.sqrt,
    math.floor,
    math.ceil,
    math.log,
    math.exp,
    math.pow,
    math.prod,
    int,
    float,
    len,
    abs,
    max,
    min,
    operator.mod,
    operator.eq,
    operator.ne,
    operator.lt,
    operator.gt,
):
    FUNCTION_TABLE.setdefault(_f, python_call(_f))

# Comparisons and boolean operators work on tensors (bool results) and on Python values alike.
FUNCTION_TABLE.update(
    {
        operator.eq: fn.binary_op("eq"),
        operator.ne: fn.binary_op("ne"),
        operator.lt: fn.binary_op("lt"),
        operator.le: fn.binary_op("le"),
        operator.gt: fn.binary_op("gt"),
        operator.ge: fn.binary_op("ge"),
        operator.and_: fn.bool_op("logical_and"),
        operator.or_: fn.bool_op("logical_or"),
        operator.xor: fn.bool_op("logical_xor"),
        operator.invert: fn.invert,
    }
)


def tensor_factory(name: str) -> Conv:
    """``torch.arange(3)``, ``torch.ones(4, 4)``...: evaluated at capture time into a constant
    (sizes must be static)."""

    def convert(cx: Converter, *args: Any, **kwargs: Any) -> Value:
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "pin_memory", "layout")}
        return cx.constant(getattr(torch, name)(*args, **kwargs), name)

    return convert


FACTORIES = {name: tensor_factory(name) for name in ("arange", "ones", "zeros", "full", "eye")}
for _name, _conv in FACTORIES.items():
    FUNCTION_TABLE[getattr(torch, _name)] = _conv

METHOD_TABLE: dict[str, Conv] = {
    **COMMON,
    **{
        f"{name}_": COMMON[name]
        for name in [
            "relu",
            "sigmoid",
            "tanh",
            "add",
            "sub",
            "mul",
            "div",
            "clamp",
            "masked_fill",
            "exp",
            "neg",
        ]
    },
    "to": fn.to,
    "type_as": lambda cx, x, other: fn.to(cx, x, other),
    "float": lambda cx, x, *a, **k: fn.cast(cx, x, torch.float32),
    "half": lambda cx, x, *a, **k: fn.cast(cx, x, torch.float16),
    "long": lambda cx, x, *a, **k: fn.cast(cx, x, torch.int64),
    "int": lambda cx, x, *a, **k: fn.cast(cx, x, torch.int32),
    "bool": lambda cx, x, *a, **k: fn.cast(cx, x, torch.bool),
    "type": lambda cx, x, dtype: fn.cast(cx, x, dtype),
    "cpu": fn.identity,
}

#: ATen ops whose argument order differs from the functional form.
_ATEN_SPECIAL: dict[str, Conv] = {
    "batch_norm": lambda cx, x, w, b, mean, var, training, momentum, eps, *rest: fn.batch_norm(
        cx, x, mean, var, w, b, training, momentum, eps
    ),
    "embedding": sf.aten_embedding,
    "_to_copy": lambda cx, x, dtype=None, **kw: fn.cast(cx, x, dtype) if dtype else x,
    "sym_size": lambda cx, x, d: sf.size(cx, x, d),
    "lift_fresh_copy": fn.identity,
    "hardtanh_": fn.hardtanh,
    "constant_pad_nd": lambda cx, x, pad, value=0.0: fn.pad(cx, x, pad, "constant", value),
    "slice": lambda cx, x, dim=0, start=None, end=None, step=1: sf.slice_(
        cx, x, dim, start, end, step
    ),
    "squeeze": lambda cx, x, dim=None: sf.squeeze(cx, x, dim),
}

ATEN_TABLE: dict[str, Conv] = {
    **{f"aten::{name}": conv for name, conv in METHOD_TABLE.items()},
    **{f"aten::{name}": conv for name, conv in _ATEN_SPECIAL.items()},
    **{f"aten::{name}": conv for name, conv in FACTORIES.items()},
}
ATEN_TABLE.update(CORE_TABLE)


# --------------------------------------------------------------------------- torch.ao quantization
# Fake-quant modules (QAT), QAT layers and converted quantized modules/functions become
# quantize -> dequantize pairs with the model's own scales (cuvil_ref/frontend/convert_quant.py).
# A quantized tensor is represented by its dequantized float value, so ``.dequantize()`` is a no-op.

from cuvil_ref.frontend import convert_quant  # noqa: E402

MODULE_TABLE.update(convert_quant.module_table())
FUNCTION_TABLE.update(convert_quant.function_table())
METHOD_TABLE["dequantize"] = fn.identity


def supported_names() -> list[str]:
    """Every torch name the tables know (for error hints)."""
    names = set(COMMON) | set(METHOD_TABLE) | {t.__name__ for t in MODULE_TABLE}
    names |= {getattr(t, "__name__", str(t)) for t in FUNCTION_TABLE}
    return sorted(names)
