"""Converters for ``aten.convolution``: 1-, 2- and 3-d, plain and transposed, batched or not.

Plain 2-d convolution becomes ``conv2d`` (the op packs claim, fused and re-laid-out by the
optimizer); 1-d convolution becomes ``conv2d`` over a height-1 image, so it gets the same kernels;
3-d becomes ``conv3d`` and every transposed convolution ``conv_transpose``. Unbatched inputs
(``[C, *spatial]``, which torch accepts) gain a batch dim of 1 and lose it again.

ATen spells padding, stride and dilation as one int per spatial dim (or one for all); torch's
string paddings (``"same"``, ``"valid"``) are already explicit after decomposition (an uneven
``"same"`` is a ``constant_pad_nd`` before the convolution).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import pair, rank
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _per_dim(name: str, value: Sequence[int] | int, k: int) -> tuple[int, ...]:
    out = pair(value, k)
    if len(out) != k:
        raise CaptureError(f"convolution: {name}={list(out)} needs {k} values (one per dim)")
    return out


def convolution(
    cx: Converter,
    x: Value,
    weight: Value,
    bias: Value | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Value:
    """``aten.convolution`` onto ``conv2d`` / ``conv3d`` / ``conv_transpose``."""
    k = rank(weight) - 2
    if k not in (1, 2, 3):
        raise CaptureError(
            f"convolution with a rank-{rank(weight)} weight ({k} spatial dims) is not supported; "
            "Cuvil runs 1-, 2- and 3-d convolutions"
        )
    if rank(x) not in (k + 1, k + 2):
        raise CaptureError(
            f"convolution: a {k}-d weight needs an input of rank {k + 1} or {k + 2}, got {x.type}"
        )
    s, p, d = (
        _per_dim(n, v, k)
        for n, v in (("stride", stride), ("padding", padding), ("dilation", dilation))
    )
    unbatched = rank(x) == k + 1
    if unbatched:
        x = cx.op("unsqueeze", [x], axis=0)
    if transposed:
        op = _per_dim("output_padding", output_padding, k)
        y = cx.op(
            "conv_transpose",
            [x, weight, bias],
            stride=s,
            padding=p,
            output_padding=op,
            dilation=d,
            groups=int(groups),
        )
    elif k == 2:
        y = cx.op(
            "conv2d", [x, weight, bias], stride=s, padding=p + p, dilation=d, groups=int(groups)
        )
    elif k == 1:  # a height-1 conv2d: packs' conv2d kernels serve 1-d convolution too
        x4 = cx.op("unsqueeze", [x], axis=2)
        w4 = cx.op("unsqueeze", [weight], axis=2)
        y4 = cx.op(
            "conv2d",
            [x4, w4, bias],
            stride=(1, s[0]),
            padding=(0, p[0], 0, p[0]),
            dilation=(1, d[0]),
            groups=int(groups),
        )
        y = cx.op("squeeze", [y4], axes=(2,))
    else:
        y = cx.op(
            "conv3d", [x, weight, bias], stride=s, padding=p + p, dilation=d, groups=int(groups)
        )
    return cx.op("squeeze", [y], axes=(0,)) if unbatched else y


def conv2d(
    cx: Converter,
    x: Value,
    weight: Value,
    bias: Value | None = None,
    stride: Sequence[int] | int = 1,
    padding: Sequence[int] | int | str = 0,
    dilation: Sequence[int] | int = 1,
    groups: int = 1,
) -> Value:
    """The high-level ``aten.conv2d`` (kept whole when a graph needs no decomposition): batched
    or unbatched, with torch's string paddings. ``"same"`` pads ``dilation * (kernel - 1)`` in
    all, the odd element at the end, as torch does."""
    if not isinstance(padding, str):
        return convolution(cx, x, weight, bias, stride, padding, dilation, False, (0, 0), groups)
    if padding == "valid":
        return convolution(cx, x, weight, bias, stride, (0, 0), dilation, False, (0, 0), groups)
    if padding != "same":
        raise CaptureError(f"conv2d: padding={padding!r} is not one of 'same', 'valid'")
    kernel = weight.type.shape[2:]
    if rank(weight) != 4 or not all(isinstance(k, int) for k in kernel):
        raise CaptureError(
            f"conv2d with padding='same' needs a static 4-d weight, got {weight.type}"
        )
    d = _per_dim("dilation", dilation, 2)
    total = [di * (int(k) - 1) for di, k in zip(d, kernel)]
    before = tuple(t // 2 for t in total)
    after = tuple(t - b for t, b in zip(total, before))
    if rank(x) not in (3, 4):
        raise CaptureError(f"conv2d: a 2-d weight needs an input of rank 3 or 4, got {x.type}")
    unbatched = rank(x) == 3
    if unbatched:
        x = cx.op("unsqueeze", [x], axis=0)
    y = cx.op(
        "conv2d",
        [x, weight, bias],
        stride=_per_dim("stride", stride, 2),
        padding=before + after,
        dilation=d,
        groups=int(groups),
    )
    return cx.op("squeeze", [y], axes=(0,)) if unbatched else y


TABLE: dict[str, Conv] = {
    "aten::convolution": convolution,
    "aten::conv2d": conv2d,
}
