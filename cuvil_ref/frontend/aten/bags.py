"""Converters for ``_embedding_bag`` (and its forward-only twin), ``col2im`` (F.fold) and the
distance ops ``_cdist_forward`` / ``_pdist_forward``.

The distances are compositions of existing ops that follow PyTorch's two algorithms: the direct
one (``|x1 - x2|`` reduced with the p-norm: counts for p = 0, max for p = inf) and, for p = 2
where torch picks it, the matrix-product one (``sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))``), whose
rounding differs visibly from the direct formula for nearby points -- so Cuvil uses the one
torch uses. ``pdist`` is the direct ``cdist`` of x with itself, upper triangle flattened.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import rank, static_dim
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(
    cx: Converter,
    weight: Value,
    indices: Value,
    offsets: Value,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Value | None = None,
    include_last_offset: bool = False,
    padding_idx: int = -1,
) -> tuple[Value | None, ...]:
    """Output 0 only: ``offset2bag``, ``bag_size`` and ``max_indices`` are for the backward."""
    if any(cx.wants(i) for i in (1, 2, 3)) and cx.used_outputs is not None:
        raise CaptureError(
            "_embedding_bag: only the bags' values (output 0) are supported; offset2bag, "
            "bag_size and max_indices serve the backward pass"
        )
    if int(mode) not in _BAG_MODES:
        raise CaptureError(f"_embedding_bag: mode={mode} is not one of {_BAG_MODES}")
    if rank(indices) != 1:
        raise CaptureError(f"_embedding_bag takes 1-d indices, got {indices.type}")
    pad = None if padding_idx is None or int(padding_idx) < 0 else int(padding_idx)
    out = cx.op(
        "embedding_bag",
        [weight, indices, offsets, per_sample_weights],
        mode=_BAG_MODES[int(mode)],
        include_last_offset=bool(include_last_offset),
        padding_idx=pad,
    )
    return out, None, None, None


def embedding_renorm(
    cx: Converter, weight: Value, indices: Value, max_norm: float, norm_type: float
) -> Value:
    """``embedding(max_norm=...)``'s renormalization (functional form of ``embedding_renorm_``):
    each row that ``indices`` references and whose p-norm exceeds ``max_norm`` is scaled by
    ``max_norm / (norm + 1e-7)``; the scale is computed in float64, as torch does."""
    if rank(weight) != 2:
        raise CaptureError(f"embedding_renorm takes a 2-d weight, got {weight.type}")
    norm = _pnorm_rows(cx, weight, float(norm_type))  # [rows, 1]
    norm64 = cx.op("cast", [norm], dtype="f64")
    eps = cx.constant(np.asarray(1e-7), "eps")
    limit = cx.constant(np.asarray(float(max_norm)), "max_norm")
    scale = cx.op(
        "cast", [cx.op("div", [limit, cx.op("add", [norm64, eps])])], dtype=weight.type.dtype.value
    )
    rows = static_dim(weight, 0, "embedding_renorm")
    flat = cx.op("reshape", [indices], shape=(-1,))
    seen = cx.op(
        "index_put",
        [
            cx.constant(np.zeros((rows, 1), bool), "seen"),
            cx.constant(np.ones((), bool), "yes"),
            flat,
        ],
        axes=(0,),
    )
    big = cx.op("logical_and", [seen, cx.op("gt", [norm64, limit])])
    return cx.op("where", [big, cx.op("mul", [weight, scale]), weight])


def _pnorm_rows(cx: Converter, w: Value, p: float) -> Value:
    mag = cx.op("abs", [w])
    if math.isinf(p):
        return cx.op("amax", [mag], axes=(-1,), keepdim=True)
    if p == 1:
        return cx.op("sum", [mag], axes=(-1,), keepdim=True)
    if p == 2:
        return cx.op("sqrt", [cx.op("sum", [cx.op("mul", [mag, mag])], axes=(-1,), keepdim=True)])
    powered = cx.op("pow", [mag, _scalar(cx, p, mag)])
    total = cx.op("sum", [powered], axes=(-1,), keepdim=True)
    return cx.op("pow", [total, _scalar(cx, 1.0 / p, mag)])


def col2im(
    cx: Converter,
    x: Value,
    output_size: Sequence[int],
    kernel_size: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    stride: Sequence[int],
) -> Value:
    return cx.op(
        "col2im",
        [x],
        output_size=tuple(int(v) for v in output_size),
        kernel=tuple(int(v) for v in kernel_size),
        dilation=tuple(int(v) for v in dilation),
        padding=tuple(int(v) for v in padding),
        stride=tuple(int(v) for v in stride),
    )


def _scalar(cx: Converter, value: float, like: Value) -> Value:
    return cx.constant(np.asarray(value, dtype=like.type.dtype.numpy), "p")


def _direct(cx: Converter, x1: Value, x2: Value, p: float) -> Value:
    """sum(|x1[.., i, :] - x2[.., j, :]|^p)^(1/p) over the last dim, with torch's special
    cases p = 0 (count of differences), 1, 2 and inf."""
    a = cx.op("unsqueeze", [x1], axis=-2)  # [.., P, 1, M]
    b = cx.op("unsqueeze", [x2], axis=-3)  # [.., 1, R, M]
    diff = cx.op("sub", [a, b])
    last = (-1,)
    if p == 0:
        nonzero = cx.op("ne", [diff, _scalar(cx, 0.0, diff)])
        return cx.op("sum", [cx.op("cast", [nonzero], dtype=x1.type.dtype.value)], axes=last)
    mag = cx.op("abs", [diff])
    if math.isinf(p):
        if static_dim(x1, -1, "cdist") == 0:
            return cx.op("sum", [mag], axes=last)  # torch gives 0 for empty vectors
        return cx.op("amax", [mag], axes=last)
    if p == 1:
        return cx.op("sum", [mag], axes=last)
    if p == 2:
        return cx.op("sqrt", [cx.op("sum", [cx.op("mul", [mag, mag])], axes=last)])
    powered = cx.op("pow", [mag, _scalar(cx, p, mag)])
    return cx.op("pow", [cx.op("sum", [powered], axes=last), _scalar(cx, 1.0 / p, mag)])


def _euclidean_by_matmul(cx: Converter, x1: Value, x2: Value) -> Value:
    """torch's ``_euclidean_dist``: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, clamped at 0."""

    def norm_and_ones(x: Value) -> tuple[Value, Value]:
        norm = cx.op("sum", [cx.op("mul", [x, x])], axes=(-1,), keepdim=True)
        one = cx.constant(np.ones((1,) * rank(x), dtype=x.type.dtype.numpy), "ones")
        return norm, cx.op("expand", [one], shape=tuple(norm.type.shape))

    n1, ones1 = norm_and_ones(x1)
    n2, ones2 = norm_and_ones(x2)
    left = cx.op("concat", [cx.op("mul", [x1, _scalar(cx, -2.0, x1)]), n1, ones1], axis=-1)
    right = cx.op("concat", [x2, ones2, n2], axis=-1)
    product = cx.op("matmul", [left, cx.op("transpose", [right], dim0=-1, dim1=-2)])
    clamped = cx.op("maximum", [product, _scalar(cx, 0.0, product)])
    return cx.op("sqrt", [clamped])


def cdist_forward(
    cx: Converter, x1: Value, x2: Value, p: float, compute_mode: int | None = None
) -> Value:
    p = float(p)
    if p < 0 or math.isnan(p):
        raise CaptureError(f"cdist with p={p}: p must be a non-negative number")
    if rank(x1) < 2 or rank(x2) < 2:
        raise CaptureError(f"cdist takes [.., P, M] and [.., R, M], got {x1.type} and {x2.type}")
    mode = 0 if compute_mode is None else int(compute_mode)
    r1, r2 = static_dim(x1, -2, "cdist"), static_dim(x2, -2, "cdist")
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
    if use_mm and r1 * r2 > 0:
        return _euclidean_by_matmul(cx, x1, x2)
    return _direct(cx, x1, x2, p)


def pdist_forward(cx: Converter, x: Value, p: float = 2.0) -> Value:
    if rank(x) != 2:
        raise CaptureError(f"pdist takes a 2-d input [N, M], got {x.type}")
    n = static_dim(x, 0, "pdist")
    full = _direct(cx, x, x, float(p))  # [N, N]
    rows, cols = np.triu_indices(n, k=1)
    flat = cx.op("reshape", [full], shape=(n * n,))
    index = cx.constant((rows * n + cols).astype(np.int64), "pairs")
    return cx.op("index_select", [flat, index], axis=0)


TABLE: dict[str, Conv] = {
    "aten::_embedding_bag": embedding_bag,
    "aten::_embedding_bag_forward_only": embedding_bag,
    "aten::embedding_renorm": embedding_renorm,
    "aten::col2im": col2im,
    "aten::_cdist_forward": cdist_forward,
    "aten::_pdist_forward": pdist_forward,
}
