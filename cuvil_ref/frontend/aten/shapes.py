"""Converters for Core ATen's rearranging ops: ``flip``, ``repeat``, ``diagonal`` and ``copy``.

``repeat`` composes exactly from existing ops: each dim ``d`` repeated ``r`` times is a new
size-1 axis before it expanded to ``r`` and merged (``reshape`` to ``r * d``), which is the
tiling ``torch.repeat`` defines. ``copy(self, src)`` is ``src`` broadcast to ``self``'s shape
in ``self``'s dtype (the functional form of ``self.copy_(src)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.aten.promotion import as_dtype
from cuvil_ref.frontend.context import Converter, SymDim, reshape_dims
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def flip(cx: Converter, x: Value, dims: Sequence[int]) -> Value:
    axes = tuple(int(d) for d in dims)
    if not axes or len(x.type.shape) == 0:
        return x
    return cx.op("flip", [x], axes=axes)


def repeat(cx: Converter, x: Value, repeats: Sequence[Any]) -> Value:
    reps = [int(r) if not isinstance(r, SymDim) else r for r in repeats]
    if any(isinstance(r, SymDim) for r in reps):
        raise CaptureError("repeat with a dynamic repeat count is not supported; make it static")
    if len(reps) < len(x.type.shape):
        raise CaptureError(
            f"repeat: {len(reps)} repeat counts for a rank-{len(x.type.shape)} tensor; give at "
            "least one per dim"
        )
    shape = [SymDim.of(d) for d in x.type.shape]
    shape = [1] * (len(reps) - len(shape)) + shape
    out_shape = [r * d for r, d in zip(reps, shape)]
    if any(s == 0 for s in out_shape):
        static = [s for s in out_shape if isinstance(s, int)]
        if len(static) != len(out_shape):
            raise CaptureError("repeat to an empty tensor with a dynamic dim is not supported")
        return cx.constant(np.zeros(static, dtype=x.type.dtype.numpy), "repeat")
    if all(r == 1 for r in reps) and len(reps) == len(x.type.shape):
        return x
    interleaved: list[Any] = []
    expanded: list[Any] = []
    for r, d in zip(reps, shape):
        interleaved += [1, d]
        expanded += [r, d]
    v = cx.op("reshape", [x], shape=reshape_dims(interleaved))
    v = cx.op("expand", [v], shape=_ir_dims(expanded))
    return cx.op("reshape", [v], shape=reshape_dims(out_shape))


def _ir_dims(sizes: Sequence[Any]) -> tuple[int | str, ...]:
    out: list[int | str] = []
    for s in sizes:
        if isinstance(s, SymDim):
            if s.name is None:
                raise CaptureError(f"repeat: the size '{s.expr}' is not an input's dynamic dim")
            out.append(s.name)
        else:
            out.append(int(s))
    return tuple(out)


def diagonal(cx: Converter, x: Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Value:
    return cx.op("diagonal", [x], offset=int(offset), dim1=int(dim1), dim2=int(dim2))


def copy(cx: Converter, x: Value, src: Any, non_blocking: bool = False) -> Value:
    out = as_dtype(cx, src, x.type.dtype)
    if out.type.shape == x.type.shape:
        return out
    return cx.op("expand", [out], shape=x.type.shape)


TABLE: dict[str, Conv] = {
    "aten::flip": flip,
    "aten::repeat": repeat,
    "aten::diagonal": diagonal,
    "aten::copy": copy,
}
