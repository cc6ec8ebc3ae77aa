"""``aten.as_strided`` as a gather of the elements it reads.

torch's decompositions emit ``as_strided`` to re-stride a tensor they just computed (the
``adaptive_avg_pool1d`` decomposition restrides a ``mean``, for instance). Its meaning depends on
the input's storage layout, which torch.export records: the argument's ``meta["val"]`` has the
strides and storage offset the eager tensor has. With those, every output element is the input
element that occupies the storage position it reads, so the op is a gather with a constant flat
index. An input whose elements share storage positions, an output that reads a position no
input element occupies, or symbolic sizes are refused with a CaptureError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.ir.graph import Value


def _ints(name: str, values: Sequence[Any]) -> tuple[int, ...]:
    if not all(isinstance(v, int) for v in values):
        raise CaptureError(f"as_strided with symbolic {name} {list(values)} is not supported")
    return tuple(int(v) for v in values)


def as_strided(
    cx: Converter,
    x: Value,
    size: Sequence[Any],
    stride: Sequence[Any],
    storage_offset: Any = None,
) -> Value:
    """``as_strided(x, size, stride, storage_offset)`` from x's recorded strides."""
    meta = cx.arg_vals[0] if cx.arg_vals else None
    if meta is None or not hasattr(meta, "stride"):
        raise CaptureError(
            "as_strided needs its input's strides, which only torch.export records; "
            "use view/reshape/permute instead"
        )
    in_shape = _ints("input shape", tuple(meta.shape))
    in_stride = _ints("input strides", tuple(meta.stride()))
    in_offset = _ints("storage offset", (meta.storage_offset(),))[0]
    out_shape, out_stride = _ints("size", tuple(size)), _ints("stride", tuple(stride))
    if len(out_shape) != len(out_stride):
        raise CaptureError(
            f"as_strided: size {list(size)} and stride {list(stride)} differ in rank"
        )
    offset = in_offset if storage_offset is None else _ints("storage_offset", (storage_offset,))[0]
    # storage position of every input element, in row-major (logical) order
    pos = np.full((), in_offset, dtype=np.int64)
    for n, st in zip(in_shape, in_stride):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * st
    pos = pos.reshape(-1)
    order = np.argsort(pos, kind="stable")
    ranked = pos[order]
    if ranked.size > 1 and np.any(ranked[1:] == ranked[:-1]):
        raise CaptureError(
            f"as_strided of a tensor whose elements overlap in storage (strides {list(in_stride)}) "
            "is not supported"
        )
    want = np.full((), offset, dtype=np.int64)
    for n, st in zip(out_shape, out_stride):
        want = want[..., None] + np.arange(n, dtype=np.int64) * st
    at = np.searchsorted(ranked, want)
    inside = at < ranked.size
    if not np.all(inside) or not np.array_equal(ranked[np.where(inside, at, 0)], want):
        raise CaptureError(
            f"as_strided(size={list(out_shape)}, stride={list(out_stride)}, offset={offset}) "
            f"reads storage that no element of its input [{', '.join(map(str, in_shape))}] "
            f"(strides {list(in_stride)}) occupies"
        )
    flat = cx.op("reshape", [x], shape=(-1,))
    index = cx.constant(order[at].astype(np.int64), "as_strided_index")
    return cx.op("index", [flat, index], axes=(0,))


TABLE: dict[str, Callable[..., Any]] = {
    "aten::as_strided": as_strided,
}
