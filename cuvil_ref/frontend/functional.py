"""Converters with PyTorch's functional signatures: ``conv2d(cx, input, weight, bias=None, ...)``.

Each function takes the :class:`Converter` and the arguments of the torch call (tensors already
replaced by IR Values), normalizes the many ways PyTorch lets you spell an argument (int or tuple
padding, ``"same"``, negative dims, ``-1`` sizes, Python scalars) and emits Cuvil ops. The op table
maps torch targets (functions, methods, modules, ATen ops) onto these.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter, SymDim, dtype_from_torch
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops.shapes import normalize_axis

# --------------------------------------------------------------------------- argument helpers


def pair(v: Any, n: int = 2) -> tuple[int, ...]:
    """``3 -> (3, 3)``; a 1-sequence is repeated; an n-sequence is kept."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(x) for x in v)
    return tuple(int(v) for _ in range(n))


def dims_arg(dims: Any) -> tuple[int, ...] | None:
    """A dim argument (int, sequence or None) as a tuple or None."""
    if dims is None:
        return None
    if isinstance(dims, (list, tuple)):
        return tuple(int(d) for d in dims)
    return (int(dims),)


def sizes_arg(sizes: Sequence[Any]) -> list[Any]:
    """``view(2, 3)`` and ``view((2, 3))`` both give ``[2, 3]``."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        return list(sizes[0])
    return list(sizes)


def rank(x: Value) -> int:
    return len(x.type.shape)


def dim_of(x: Value, axis: int) -> int | SymDim:
    return SymDim.of(x.type.shape[normalize_axis(axis, rank(x))])


def static_dim(x: Value, axis: int, what: str) -> int:
    d = x.type.shape[normalize_axis(axis, rank(x))]
    if isinstance(d, str):
        raise CaptureError(f"{what} along dynamic dim '{d}' is not supported; make that dim static")
    return d


# --------------------------------------------------------------------------- elementwise

_PY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
    "maximum": max,
    "minimum": min,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
}


def bool_op(logical: str) -> Callable[..., Any]:
    """``a & b`` / ``a | b`` / ``a ^ b``: logical ops on bool tensors (Cuvil has no bitwise
    integer ops); on Python values, the Python operator."""
    py = {"logical_and": operator.and_, "logical_or": operator.or_, "logical_xor": operator.xor}

    def convert(cx: Converter, a: Any, b: Any) -> Any:
        if not isinstance(a, Value) and not isinstance(b, Value):
            return py[logical](a, b)
        for v in (a, b):
            if isinstance(v, Value) and v.type.dtype.value != "bool":
                raise CaptureError(
                    f"bitwise {logical.split('_')[1]} on a {v.type.dtype.value} tensor is not "
                    "supported; Cuvil supports it on bool tensors (masks) only"
                )
        return binary(cx, logical, a, b)

    return convert


def invert(cx: Converter, a: Any) -> Any:
    """``~mask`` on a bool tensor is logical_not; ``~n`` on a Python int stays Python."""
    if not isinstance(a, Value):
        return ~a
    if a.type.dtype.value != "bool":
        raise CaptureError("bitwise not on a non-bool tensor is not supported; use a bool mask")
    return cx.op("logical_not", [a])


def binary(cx: Converter, op: str, a: Any, b: Any) -> Any:
    """``a op b`` where either side may be a Python scalar (made a 0-d constant of the tensor's
    dtype, as PyTorch does); with no tensor at all the result is computed in Python (sizes)."""
    if not isinstance(a, Value) and not isinstance(b, Value):
        return _PY_BINARY[op](a, b)
    if op == "pow" and isinstance(a, Value) and b in (1, 1.0):
        return a
    av = cx.scalar(a, like=b if isinstance(b, Value) else None)
    bv = cx.scalar(b, like=a if isinstance(a, Value) else None)
    if op == "div" and av.type.dtype.numpy.kind in "iub" and bv.type.dtype.numpy.kind in "iub":
        av, bv = cx.op("cast", [av], dtype="f32"), cx.op("cast", [bv], dtype="f32")
    return cx.op(op, [av, bv])


def add(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    if alpha != 1:
        other = binary(cx, "mul", other, alpha)
    return binary(cx, "add", input, other)


def sub(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    if alpha != 1:
        other = binary(cx, "mul", other, alpha)
    return binary(cx, "sub", input, other)


def rsub(cx: Converter, input: Any, other: Any, alpha: Any = 1) -> Any:
    return sub(cx, other, input, alpha)


def div(cx: Converter, input: Any, other: Any, rounding_mode: str | None = None) -> Any:
    if rounding_mode is None:
        return binary(cx, "div", input, other)
    if not isinstance(input, Value) and not isinstance(other, Value):
        q = input / other
        return math.floor(q) if rounding_mode == "floor" else math.trunc(q)
    raise CaptureError(
        f"div with rounding_mode={rounding_mode!r} on tensors is not supported by Cuvil; "
        "use true division"
    )


def floordiv(cx: Converter, a: Any, b: Any) -> Any:
    if isinstance(a, Value) or isinstance(b, Value):
        return div(cx, a, b, rounding_mode="floor")
    return a // b


def unary(op: str) -> Callable[..., Value]:
    def convert(cx: Converter, input: Value, *args: Any, **kwargs: Any) -> Value:
        return cx.op(op, [input])

    convert.__name__ = op
    return convert


def neg(cx: Converter, input: Any) -> Any:
    return cx.op("neg", [input]) if isinstance(input, Value) else -input


def gelu(cx: Converter, input: Value, approximate: str = "none") -> Value:
    return cx.op("gelu", [input], approximate=approximate)


def hardtanh(
    cx: Converter, input: Value, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Value:
    if (min_val, max_val) == (0.0, 6.0):
        return cx.op("relu6", [input])
    return cx.op("hardtanh", [input], min_val=min_val, max_val=max_val)


def leaky_relu(
    cx: Converter, input: Value, negative_slope: float = 0.01, inplace: bool = False
) -> Value:
    return cx.op("leaky_relu", [input], negative_slope=negative_slope)


def elu(cx: Converter, input: Value, alpha: float = 1.0, inplace: bool = False) -> Value:
    return cx.op("elu", [input], alpha=alpha)


def softplus(cx: Converter, input: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
    return cx.op("softplus", [input], beta=beta, threshold=threshold)


def clamp(cx: Converter, input: Value, min: Any = None, max: Any = None) -> Value:
    if isinstance(min, Value) or isinstance(max, Value):
        out = input
        if min is not None:
            out = binary(cx, "maximum", out, min)
        if max is not None:
            out = binary(cx, "minimum", out, max)
        return out
    return cx.op(
        "clamp",
        [input],
        min=None if min is None else float(min),
        max=None if max is None else float(max),
    )


def where(cx: Converter, condition: Value, input: Any = None, other: Any = None) -> Value:
    if input is None:
        raise CaptureError("torch.where(condition) with one argument (nonzero) is not supported")
    like = input if isinstance(input, Value) else other
    return cx.op("where", [condition, cx.scalar(input, like=like), cx.scalar(other, like=like)])


def masked_fill(cx: Converter, input: Value, mask: Value, value: Any) -> Value:
    return cx.op("where", [mask, cx.scalar(value, like=input), input])


def cast(cx: Converter, input: Value, dtype: Any) -> Value:
    target = dtype_from_torch(dtype)
    if target == input.type.dtype:
        return input
    return cx.op("cast", [input], dtype=target.value)


def to(cx: Converter, input: Value, *args: Any, **kwargs: Any) -> Value:
    """``x.to(dtype)``, ``x.to(device, dtype)``, ``x.to(other)``: only the dtype matters."""
    import torch

    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Value):
            return (
                input
                if a.type.dtype == input.type.dtype
                else cx.op("cast", [input], dtype=a.type.dtype.value)
            )
    return input if dtype is None else cast(cx, input, dtype)


def identity(cx: Converter, input: Any, *args: Any, **kwargs: Any) -> Any:
    return input


def dropout(
    cx: Converter, input: Value, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Value:
    if training:
        raise CaptureError(
            "dropout is called with training=True, so it would drop values at inference; "
            "call model.eval() and pass training=self.training to F.dropout"
        )
    return input


# --------------------------------------------------------------------------- reductions


def _reduce(op: str) -> Callable[..., Value]:
    def convert(
        cx: Converter, input: Value, dim: Any = None, keepdim: bool = False, dtype: Any = None
    ) -> Value:
        x = cast(cx, input, dtype) if dtype is not None else input
        if op in ("sum", "mean") and x.type.dtype.numpy.kind in "bu" and dtype is None:
            x = cx.op("cast", [x], dtype="i64")  # torch sums bools and small ints as int64
        axes = dims_arg(dim)
        return cx.op(op, [x], axes=axes if axes else None, keepdim=bool(keepdim))

    convert.__name__ = op
    return convert


sum_ = _reduce("sum")
prod = _reduce("prod")
mean = _reduce("mean")
amax = _reduce("amax")
amin = _reduce("amin")


def argmax(cx: Converter, input: Value, dim: int | None = None, keepdim: bool = False) -> Value:
    return cx.op("argmax", [input], axis=dim, keepdim=bool(keepdim))


def argmin(cx: Converter, input: Value, dim: int | None = None, keepdim: bool = False) -> Value:
    return cx.op("argmin", [input], axis=dim, keepdim=bool(keepdim))


def _var_std(op: str) -> Callable[..., Value]:
    def convert(
        cx: Converter,
        input: Value,
        dim: Any = None,
        unbiased: Any = None,
        keepdim: bool = False,
        *,
        correction: Any = None,
    ) -> Value:
        if isinstance(unbiased, bool):
            corr = 1 if unbiased else 0
        elif unbiased is not None and dim is not None and not isinstance(dim, bool):
            corr = 1
        else:
            corr = 1 if correction is None else int(correction)
        if isinstance(dim, bool):  # x.var(False): the unbiased flag passed positionally
            dim, corr = None, int(dim)
        axes = dims_arg(dim)
        return cx.op(
            op, [input], axes=axes if axes else None, correction=corr, keepdim=bool(keepdim)
        )

    convert.__name__ = op
    return convert


var = _var_std("var")
std = _var_std("std")


def max_(cx: Converter, input: Value, dim: Any = None, keepdim: bool = False) -> Any:
    """``torch.max(x)``, ``torch.max(x, dim)`` (values, indices) and ``torch.max(a, b)``."""
    if isinstance(dim, Value):
        return binary(cx, "maximum", input, dim)
    if dim is None:
        return cx.op("amax", [input], axes=None, keepdim=False)
    return (
        cx.op("amax", [input], axes=(int(dim),), keepdim=bool(keepdim)),
        cx.op("argmax", [input], axis=int(dim), keepdim=bool(keepdim)),
    )


def min_(cx: Converter, input: Value, dim: Any = None, keepdim: bool = False) -> Any:
    if isinstance(dim, Value):
        return binary(cx, "minimum", input, dim)
    if dim is None:
        return cx.op("amin", [input], axes=None, keepdim=False)
    raise CaptureError("torch.min(x, dim) (values and indices) is not supported; use amin")


def softmax(
    cx: Converter,
    input: Value,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: Any = None,
    half_to_float: bool = False,
) -> Value:
    x = cast(cx, input, dtype) if dtype is not None else input
    return cx.op("softmax", [x], axis=-1 if dim is None else int(dim))


def log_softmax(
    cx: Converter,
    input: Value,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: Any = None,
    half_to_float: bool = False,
) -> Value:
    x = cast(cx, input, dtype) if dtype is not None else input
    return cx.op("log_softmax", [x], axis=-1 if dim is None else int(dim))


# --------------------------------------------------------------------------- normalization


def layer_norm(
    cx: Converter,
    input: Value,
    normalized_shape: Any,
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Value:
    shape = (
        pair(normalized_shape, 1)
        if isinstance(normalized_shape, int)
        else tuple(int(d) for d in normalized_shape)
    )
    return cx.op("layer_norm", [input, weight, bias], normalized_shape=shape, eps=float(eps))


def batch_norm(
    cx: Converter,
    input: Value,
    running_mean: Value | None,
    running_var: Value | None,
    weight: Value | None = None,
    bias: Value | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Value:
    if training or running_mean is None or running_var is None:
        raise CaptureError(
            "batch_norm runs in training mode (batch statistics); call model.eval() before "
            "capture so it uses its running statistics"
        )
    if weight is None and bias is not None:
        weight = cx.constant(np.ones(bias.type.shape, bias.type.dtype.numpy), "ones")
    return cx.op("batch_norm", [input, running_mean, running_var, weight, bias], eps=float(eps))


# --------------------------------------------------------------------------- linear algebra


def linear(cx: Converter, input: Value, weight: Value, bias: Value | None = None) -> Value:
    return cx.op("linear", [input, weight, bias])


def matmul(cx: Converter, input: Value, other: Value) -> Value:
    return cx.op("matmul", [input, other])


def addmm(
    cx: Converter, input: Value, mat1: Value, mat2: Value, beta: Any = 1, alpha: Any = 1
) -> Value:
    prod_ = (
        binary(cx, "mul", matmul(cx, mat1, mat2), alpha) if alpha != 1 else matmul(cx, mat1, mat2)
    )
    return add(cx, prod_, binary(cx, "mul", input, beta) if beta != 1 else input)


# --------------------------------------------------------------------------- conv and pooling


def conv_padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    """torch padding (int, pair, "valid", "same") -> (top, left, bottom, right)."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        lo = [t // 2 for t in totals]
        return (lo[0], lo[1], totals[0] - lo[0], totals[1] - lo[1])
    ph, pw = pair(padding)
    return (ph, pw, ph, pw)


def conv2d(
    cx: Converter,
    input: Value,
    weight: Value,
    bias: Value | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Value:
    if rank(weight) != 4:
        raise CaptureError(f"conv2d expects a 4-D weight, got {weight.type}")
    dil = pair(dilation)
    kernel = tuple(int(k) for k in weight.type.shape[2:])
    if padding == "same" and pair(stride) != (1, 1):
        raise CaptureError("padding='same' needs stride 1 (as in PyTorch)")
    pads = conv_padding(padding, kernel, dil)
    return cx.op(
        "conv2d",
        [input, weight, bias],
        stride=pair(stride),
        padding=pads,
        dilation=dil,
        groups=int(groups),
    )


def max_pool2d(
    cx: Converter,
    input: Value,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Value:
    if return_indices:
        raise CaptureError("max_pool2d with return_indices=True is not supported by Cuvil")
    kernel = pair(kernel_size)
    strides = kernel if stride is None or stride == [] or stride == () else pair(stride)
    return cx.op(
        "max_pool2d",
        [input],
        kernel=kernel,
        stride=strides,
        padding=pair(padding),
        dilation=pair(dilation),
        ceil_mode=bool(ceil_mode),
    )


def avg_pool2d(
    cx: Converter,
    input: Value,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    kernel = pair(kernel_size)
    strides = kernel if stride is None or stride == [] or stride == () else pair(stride)
    return cx.op(
        "avg_pool2d",
        [input],
        kernel=kernel,
        stride=strides,
        padding=pair(padding),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=divisor_override,
    )


def adaptive_avg_pool2d(
    cx: Converter, input: Value, output_size: Any, op: str = "adaptive_avg_pool2d"
) -> Value:
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * 2
    for i, s in enumerate(sizes):
        if s is None:
            sizes[i] = static_dim(input, i - 2, "adaptive_avg_pool2d")
    return cx.op(op, [input], output_size=tuple(int(s) for s in sizes))


def adaptive_max_pool2d(
    cx: Converter, input: Value, output_size: Any, return_indices: bool = False
) -> Value:
    if return_indices:
        raise CaptureError("adaptive_max_pool2d with return_indices=True is not supported")
    return adaptive_avg_pool2d(cx, input, output_size, "adaptive_max_pool2d")


def group_norm(
    cx: Converter,
    input: Value,
    num_groups: int,
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Value:
    return cx.op("group_norm", [input, weight, bias], num_groups=int(num_groups), eps=float(eps))


def rms_norm(
    cx: Converter,
    input: Value,
    normalized_shape: Any,
    weight: Value | None = None,
    eps: float | None = None,
) -> Value:
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, int)
        else tuple(int(d) for d in normalized_shape)
    )
    return cx.op("rms_norm", [input, weight], normalized_shape=shape, eps=eps)


def pad(
    cx: Converter,
    input: Value,
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Value:
    if mode != "constant":
        raise CaptureError(
            f"F.pad mode={mode!r} is not supported by Cuvil; only mode='constant' is"
        )
    return cx.op(
        "pad",
        [input],
        pads=tuple(int(p) for p in pad),
        value=0.0 if value is None else float(value),
    )


def binary_op(op: str) -> Callable[..., Any]:
    """A converter ``(cx, input, other) -> input op other`` for one binary op."""

    def convert(cx: Converter, input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:
        return binary(cx, op, input, other)

    convert.__name__ = op
    return convert
