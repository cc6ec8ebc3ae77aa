"""JAX primitive -> Cuvil ops: ``TABLE[name](cx, *operands, **params)`` returns the outputs.

Semantics follow XLA's (``lax``): ``dot_general`` orders its result batch dims, then the lhs'
free dims, then the rhs'; ``conv_general_dilated`` takes explicit layouts
(``dimension_numbers``); ``integer_pow`` multiplies (it is not ``pow``); ``rem`` has C's sign
rule (``fmod``); ``select_n(which, *cases)`` picks ``cases[which]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.jax.math_prims import TABLE as MATH_TABLE
from cuvil_ref.frontend.jax.walker import JaxConverter
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _rank(x: Value) -> int:
    return len(x.type.shape)


def _permute(cx: JaxConverter, x: Value, perm: Sequence[int]) -> Value:
    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(len(perm))) else cx.op("permute", [x], perm=perm)


def _reshape(cx: JaxConverter, x: Value, shape: Sequence[int]) -> Value:
    shape = tuple(int(d) for d in shape)
    return x if shape == x.type.shape else cx.op("reshape", [x], shape=shape)


def _unary(op: str) -> Conv:
    return lambda cx, x, **params: cx.op(op, [x])


def _binary(op: str) -> Conv:
    return lambda cx, a, b, **params: cx.op(op, [a, b])


def _bool_or_bitwise(logical: str, bitwise: str) -> Conv:
    def convert(cx: JaxConverter, *xs: Value, **params: Any) -> Value:
        op = logical if xs[0].type.dtype.value == "bool" else bitwise
        return cx.op(op, list(xs))

    return convert


def _dtype(dtype: Any) -> Any:
    from cuvil_ref.ir.dtypes import DType

    try:
        return DType.from_numpy(np.dtype(dtype))
    except ValueError as exc:
        raise CaptureError(f"JAX dtype {dtype} has no Cuvil dtype") from exc


def convert_element_type(cx: JaxConverter, x: Value, new_dtype: Any, **params: Any) -> Value:
    target = _dtype(new_dtype)
    return x if target == x.type.dtype else cx.op("cast", [x], dtype=target.value)


def integer_pow(cx: JaxConverter, x: Value, y: int) -> Value:
    """x ** y by repeated squaring, as XLA computes it (not ``pow``)."""
    n = abs(int(y))
    if n == 0:
        return cx.op(
            "add", [cx.op("mul", [x, cx.scalar(0, x.type.dtype)]), cx.scalar(1, x.type.dtype)]
        )
    result: Value | None = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else cx.op("mul", [result, base])
        n >>= 1
        if n:
            base = cx.op("mul", [base, base])
    assert result is not None
    return cx.op("div", [cx.scalar(1, x.type.dtype), result]) if y < 0 else result


def square(cx: JaxConverter, x: Value, **params: Any) -> Value:
    return cx.op("mul", [x, x])


def exp2(cx: JaxConverter, x: Value, **params: Any) -> Value:
    return cx.op("pow", [cx.scalar(2.0, x.type.dtype), x])


def clamp(cx: JaxConverter, lo: Value, x: Value, hi: Value) -> Value:
    return cx.op("minimum", [cx.op("maximum", [x, lo]), hi])


def select_n(cx: JaxConverter, which: Value, *cases: Value) -> Value:
    if which.type.dtype.value == "bool":
        if len(cases) != 2:
            raise CaptureError(f"select_n with a bool selector takes 2 cases, got {len(cases)}")
        return cx.op("where", [which, cases[1], cases[0]])
    out = cases[0]
    for k, case in enumerate(cases[1:], start=1):
        hit = cx.op("eq", [which, cx.scalar(k, which.type.dtype)])
        out = cx.op("where", [hit, case, out])
    return out


def broadcast_in_dim(
    cx: JaxConverter,
    x: Value,
    shape: Sequence[int],
    broadcast_dimensions: Sequence[int],
    **params: Any,
) -> Value:
    shape = tuple(int(d) for d in shape)
    placed = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        placed[dst] = x.type.shape[src]
    y = _reshape(cx, x, placed)
    return y if tuple(placed) == shape else cx.op("expand", [y], shape=shape)


def reshape(
    cx: JaxConverter, x: Value, new_sizes: Sequence[int], dimensions: Any = None, **params: Any
) -> Value:
    if dimensions is not None:
        x = _permute(cx, x, dimensions)
    return _reshape(cx, x, new_sizes)


def transpose(cx: JaxConverter, x: Value, permutation: Sequence[int]) -> Value:
    return _permute(cx, x, permutation)


def squeeze(cx: JaxConverter, x: Value, dimensions: Sequence[int]) -> Value:
    return cx.op("squeeze", [x], axes=tuple(int(d) for d in dimensions))


def expand_dims(cx: JaxConverter, x: Value, dimensions: Sequence[int]) -> Value:
    for d in sorted(int(d) for d in dimensions):
        x = cx.op("unsqueeze", [x], axis=d)
    return x


def concatenate(cx: JaxConverter, *xs: Value, dimension: int) -> Value:
    return cx.op("concat", list(xs), axis=int(dimension))


def slice_(
    cx: JaxConverter,
    x: Value,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Value:
    steps = strides or [1] * len(start_indices)
    for axis, (lo, hi, st) in enumerate(zip(start_indices, limit_indices, steps)):
        if (lo, hi, st) != (0, x.type.shape[axis], 1):
            x = cx.op("slice", [x], axis=axis, start=int(lo), end=int(hi), step=int(st))
    return x


def pad(cx: JaxConverter, x: Value, value: Value, padding_config: Sequence[Any]) -> Value:
    if any(int(interior) for _, _, interior in padding_config):
        raise CaptureError("lax.pad with interior padding is not supported by Cuvil")
    fill = cx.builder.constant_array(value.name)
    if fill is None or np.ndim(fill) != 0:
        raise CaptureError("lax.pad needs a constant scalar padding value")
    pads: list[int] = []
    for lo, hi, _ in reversed(list(padding_config)):  # torch order: last dim first
        pads += [int(lo), int(hi)]
    return cx.op("pad", [x], pads=tuple(pads), value=float(fill))


def _reduce(op: str) -> Conv:
    def convert(cx: JaxConverter, x: Value, axes: Sequence[int], **params: Any) -> Value:
        return cx.op(op, [x], axes=tuple(int(a) for a in axes), keepdim=False)

    return convert


def _arg(op: str) -> Conv:
    def convert(cx: JaxConverter, x: Value, axes: Sequence[int], index_dtype: Any) -> Value:
        (axis,) = axes
        out = cx.op(op, [x], axis=int(axis), keepdim=False)
        want = _dtype(index_dtype)
        return out if out.type.dtype == want else cx.op("cast", [out], dtype=want.value)

    return convert


def iota(
    cx: JaxConverter, dtype: Any, shape: Sequence[int], dimension: int, **params: Any
) -> Value:
    shape = tuple(int(d) for d in shape)
    ramp = np.arange(shape[dimension]).reshape(
        [shape[dimension] if i == dimension else 1 for i in range(len(shape))]
    )
    return cx.constant(np.broadcast_to(ramp, shape).astype(np.dtype(dtype)), "iota")


def dot_general(
    cx: JaxConverter,
    lhs: Value,
    rhs: Value,
    dimension_numbers: Any,
    preferred_element_type: Any = None,
    **params: Any,
) -> Value:
    """Batch dims first, then lhs free, rhs free (XLA's order), as one batched matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in t) for t in (lc, rc, lb, rb))
    out_dtype = cx.out_types[0].dtype
    if lhs.type.dtype != out_dtype:
        lhs = cx.op("cast", [lhs], dtype=out_dtype.value)
    if rhs.type.dtype != out_dtype:
        rhs = cx.op("cast", [rhs], dtype=out_dtype.value)
    ls, rs = lhs.type.shape, rhs.type.shape
    lf = [d for d in range(len(ls)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rs)) if d not in rc and d not in rb]
    size = lambda shape, dims: int(np.prod([shape[d] for d in dims])) if dims else 1  # noqa: E731
    batch = [ls[d] for d in lb]
    lhs3 = _reshape(
        cx, _permute(cx, lhs, (*lb, *lf, *lc)), (size(ls, lb), size(ls, lf), size(ls, lc))
    )
    rhs3 = _reshape(
        cx, _permute(cx, rhs, (*rb, *rc, *rf)), (size(rs, rb), size(rs, rc), size(rs, rf))
    )
    out = cx.op("matmul", [lhs3, rhs3])
    return _reshape(cx, out, (*batch, *[ls[d] for d in lf], *[rs[d] for d in rf]))


def conv_general_dilated(
    cx: JaxConverter,
    lhs: Value,
    rhs: Value,
    *,
    window_strides: Sequence[int],
    padding: Sequence[Sequence[int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
    dimension_numbers: Any,
    feature_group_count: int,
    batch_group_count: int,
    **params: Any,
) -> Value:
    """2-D convolution in any layout: transposed to NCHW/OIHW, ``conv2d``, transposed back."""
    if len(window_strides) != 2:
        raise CaptureError(
            f"conv_general_dilated over {len(window_strides)} spatial dims: Cuvil "
            "imports 2-D convolutions"
        )
    if any(int(d) != 1 for d in lhs_dilation) or int(batch_group_count) != 1:
        raise CaptureError(
            "conv_general_dilated with lhs_dilation (transposed convolution) or "
            "batch_group_count > 1 is not supported by Cuvil"
        )
    lspec, rspec, ospec = (
        dimension_numbers.lhs_spec,
        dimension_numbers.rhs_spec,
        dimension_numbers.out_spec,
    )
    x = _permute(cx, lhs, lspec)
    w = _permute(cx, rhs, rspec)
    (t, b), (le, r) = ((int(p[0]), int(p[1])) for p in padding)
    y = cx.op(
        "conv2d",
        [x, w],
        stride=tuple(int(s) for s in window_strides),
        padding=(t, le, b, r),
        dilation=tuple(int(d) for d in rhs_dilation),
        groups=int(feature_group_count),
    )
    inverse = [0] * len(ospec)
    for i, d in enumerate(ospec):
        inverse[d] = i
    return _permute(cx, y, inverse)


def _window(op: str) -> Conv:
    def convert(
        cx: JaxConverter,
        x: Value,
        *,
        window_dimensions: Sequence[int],
        window_strides: Sequence[int],
        padding: Sequence[Sequence[int]],
        base_dilation: Sequence[int],
        window_dilation: Sequence[int],
        **params: Any,
    ) -> Value:
        """2-D pooling: windows of size 1 on two dims (which become N and C)."""
        dims = [
            i
            for i, k in enumerate(window_dimensions)
            if int(k) != 1 or int(window_strides[i]) != 1 or tuple(padding[i]) != (0, 0)
        ]
        if len(x.type.shape) != 4 or len(dims) > 2 or any(int(d) != 1 for d in base_dilation):
            raise CaptureError("reduce_window: Cuvil imports 2-D pooling of rank-4 tensors")
        spatial = [d for d in range(4) if d in dims] or [2, 3]
        while len(spatial) < 2:
            spatial.insert(0, next(d for d in range(4) if d not in spatial))
        rest = [d for d in range(4) if d not in spatial]
        perm = (*rest, *spatial)
        y = _permute(cx, x, perm)
        pads = []
        for d in reversed(spatial):
            pads += [int(padding[d][0]), int(padding[d][1])]
        fill = -np.inf if op == "max" else 0.0
        if any(pads):
            y = cx.op("pad", [y], pads=tuple(pads), value=fill)
        kernel = tuple(int(window_dimensions[d]) for d in spatial)
        stride = tuple(int(window_strides[d]) for d in spatial)
        dil = tuple(int(window_dilation[d]) for d in spatial)
        if op == "max":
            y = cx.op(
                "max_pool2d",
                [y],
                kernel=kernel,
                stride=stride,
                padding=(0, 0),
                dilation=dil,
                ceil_mode=False,
            )
        else:
            if dil != (1, 1):
                raise CaptureError("reduce_window_sum with window dilation is not supported")
            y = cx.op(
                "avg_pool2d",
                [y],
                kernel=kernel,
                stride=stride,
                padding=(0, 0),
                ceil_mode=False,
                count_include_pad=True,
                divisor_override=1,
            )
        inverse = [0] * 4
        for i, d in enumerate(perm):
            inverse[d] = i
        return _permute(cx, y, inverse)

    return convert


def identity(cx: JaxConverter, x: Value, **params: Any) -> Value:
    return x


def split(cx: JaxConverter, x: Value, sizes: Sequence[int], axis: int) -> list[Value]:
    return list(
        cx.builder.op_multi(
            "split",
            [x],
            {"axis": int(axis), "sizes": tuple(int(s) for s in sizes)},
            name=cx.name,
            provenance=cx.provenance,
        )
    )


TABLE: dict[str, Conv] = {
    **{
        name: _unary(op)
        for name, op in {
            "neg": "neg",
            "exp": "exp",
            "log": "log",
            "tanh": "tanh",
            "logistic": "sigmoid",
            "sqrt": "sqrt",
            "rsqrt": "rsqrt",
            "abs": "abs",
            "sign": "sign",
            "floor": "floor",
            "ceil": "ceil",
            "erf": "erf",
            "log1p": "log1p",
            "expm1": "expm1",
            "sin": "sin",
            "cos": "cos",
            "tan": "tan",
            "asin": "asin",
            "acos": "acos",
            "atan": "atan",
            "sinh": "sinh",
            "cosh": "cosh",
            "asinh": "asinh",
            "acosh": "acosh",
            "atanh": "atanh",
        }.items()
    },
    **{
        name: _binary(op)
        for name, op in {
            "add": "add",
            "sub": "sub",
            "mul": "mul",
            "max": "maximum",
            "min": "minimum",
            "pow": "pow",
            "eq": "eq",
            "ne": "ne",
            "lt": "lt",
            "le": "le",
            "gt": "gt",
            "ge": "ge",
            "rem": "fmod",
            "atan2": "atan2",
        }.items()
    },
    "and": _bool_or_bitwise("logical_and", "bitwise_and"),
    "or": _bool_or_bitwise("logical_or", "bitwise_or"),
    "xor": _bool_or_bitwise("logical_xor", "bitwise_xor"),
    "not": _bool_or_bitwise("logical_not", "bitwise_not"),
    "round": lambda cx, x, rounding_method=1, **p: _round(cx, x, rounding_method),
    "convert_element_type": convert_element_type,
    "integer_pow": integer_pow,
    "square": square,
    "exp2": exp2,
    "clamp": clamp,
    "select_n": select_n,
    "broadcast_in_dim": broadcast_in_dim,
    "reshape": reshape,
    "transpose": transpose,
    "squeeze": squeeze,
    "expand_dims": expand_dims,
    "concatenate": concatenate,
    "slice": slice_,
    "pad": pad,
    "split": split,
    "reduce_sum": _reduce("sum"),
    "reduce_max": _reduce("amax"),
    "reduce_min": _reduce("amin"),
    "reduce_prod": _reduce("prod"),
    "argmax": _arg("argmax"),
    "argmin": _arg("argmin"),
    "iota": iota,
    "dot_general": dot_general,
    "conv_general_dilated": conv_general_dilated,
    "reduce_window_max": _window("max"),
    "reduce_window_sum": _window("sum"),
    "stop_gradient": identity,
    "copy": identity,
    "copy_p": identity,
    "optimization_barrier": lambda cx, *xs, **p: list(xs),
    **MATH_TABLE,
}


def _round(cx: JaxConverter, x: Value, method: Any) -> Value:
    if int(method) != 1:  # 0: half away from zero
        raise CaptureError(
            "lax.round with rounding_method=AWAY_FROM_ZERO is not supported; "
            "Cuvil rounds half to even (ROUND_TO_NEAREST_EVEN)"
        )
    return cx.op("round", [x])
