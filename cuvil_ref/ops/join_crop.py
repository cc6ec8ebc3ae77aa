"""Joining and cropping: concat, split, slice, narrow, pad -- with PyTorch's rules for negative
axes, clamped slice bounds, dtype promotion in ``concat`` and negative (cropping) pads.

On a symbolic dim, static slice bounds assume the dim reaches them (checked when run); ``narrow``
takes a symbolic length (``position_table[:seq_len]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType, promote
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, register
from cuvil_ref.ops.shape_ops import out_type, shape_op
from cuvil_ref.ops.shapes import normalize_axis


def _concat_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    first = types[0].shape
    axis = normalize_axis(attrs["axis"], len(first))
    dtype = types[0].dtype
    total: int = 0
    for t in types:
        dtype = promote(dtype, t.dtype)
        if len(t.shape) != len(first) or any(
            d != e for i, (d, e) in enumerate(zip(t.shape, first, strict=True)) if i != axis
        ):
            shown = ", ".join(f"[{format_shape(u.shape)}]" for u in types)
            raise ShapeError(f"concat on axis {axis}: other dims must match, got {shown}")
    sizes = [t.shape[axis] for t in types]
    if len(sizes) == 1:
        return (TensorType(first, dtype),)
    if not all(isinstance(s, int) for s in sizes):
        raise ShapeError(f"concat on axis {axis} of symbolic sizes {sizes} cannot be typed")
    total = sum(sizes)  # type: ignore[arg-type]
    return (TensorType((*first[:axis], total, *first[axis + 1 :]), dtype),)


def _concat(*xs: np.ndarray, axis: int) -> np.ndarray:
    dtype = DType.from_numpy(xs[0].dtype)
    for x in xs[1:]:
        dtype = promote(dtype, DType.from_numpy(x.dtype))
    return np.concatenate([x.astype(dtype.numpy, copy=False) for x in xs], axis=axis)


def _split_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    axis = normalize_axis(attrs["axis"], len(shape))
    sizes = attrs["sizes"]
    if not sizes or min(sizes) < 0 or shape[axis] != sum(sizes):
        raise ShapeError(
            f"split: sizes {sizes} must be non-negative and add up to dim {axis} of "
            f"[{format_shape(shape)}]"
        )
    return tuple(TensorType((*shape[:axis], s, *shape[axis + 1 :]), types[0].dtype) for s in sizes)


def _split(x: np.ndarray, *, axis: int, sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.split(x, cuts, axis=axis))


def _slice_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = list(types[0].shape)
    axis = normalize_axis(attrs["axis"], len(shape))
    start, end, step = attrs["start"], attrs["end"], attrs["step"]
    if step < 1:
        raise ShapeError(f"slice: step must be >= 1, got {step}")
    dim = shape[axis]
    open_end = end is None or end >= 2**62
    if isinstance(dim, str):
        if start == 0 and step == 1 and open_end:
            return out_type(types[0], tuple(shape))
        if start < 0 and open_end:  # the last -start rows: x[-1:]
            shape[axis] = len(range(0, -start, step))
        elif start >= 0 and not open_end and end >= start:  # x[0:1]: assumes dim >= end
            shape[axis] = len(range(start, end, step))
        else:
            raise ShapeError(
                f"slice [{start}:{end}:{step}] of symbolic dim '{dim}' (axis {axis}) has no "
                "static size"
            )
        return out_type(types[0], tuple(shape))
    shape[axis] = len(range(*slice(start, end, step).indices(dim)))
    return out_type(types[0], tuple(shape))


def _narrow_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = list(types[0].shape)
    axis = normalize_axis(attrs["axis"], len(shape))
    (length,) = attrs["length"]
    start, dim = attrs["start"], shape[axis]
    if start < 0:
        raise ShapeError(f"narrow: start must be >= 0, got {start}")
    if isinstance(length, int) and isinstance(dim, int) and start + length > dim:
        raise ShapeError(f"narrow: [{start}, {start}+{length}) exceeds dim {axis} of size {dim}")
    shape[axis] = length
    return out_type(types[0], tuple(shape))


def _narrow(x: np.ndarray, *, axis: int, start: int, length: tuple[int]) -> np.ndarray:
    """x[start : start + length] along ``axis``; the window must lie inside the dim."""
    n = length[0]
    if start + n > x.shape[axis]:
        raise ShapeError(
            f"narrow: [{start}, {start + n}) exceeds dim {axis} of size {x.shape[axis]}"
        )
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, start + n)
    return x[tuple(index)]


def _slice(x: np.ndarray, *, axis: int, start: int, end: int | None, step: int) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, end, step)
    return x[tuple(index)]


def _pad_pairs(rank: int, pads: tuple[int, ...]) -> list[tuple[int, int]]:
    """torch order (last dim first) -> one (before, after) pair per dim, first dim first."""
    if len(pads) % 2 or len(pads) > 2 * rank:
        raise ShapeError(f"pad: {len(pads)} pads for rank {rank}; give pairs, at most {2 * rank}")
    pairs = [(0, 0)] * rank
    for k in range(len(pads) // 2):
        pairs[rank - 1 - k] = (pads[2 * k], pads[2 * k + 1])
    return pairs


def _pad_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = list(types[0].shape)
    for i, (lo, hi) in enumerate(_pad_pairs(len(shape), attrs["pads"])):
        if (lo, hi) == (0, 0):
            continue
        if isinstance(shape[i], str):
            raise ShapeError(f"pad of symbolic dim '{shape[i]}' (axis {i}) has no static size")
        size = shape[i] + lo + hi  # type: ignore[operator]
        if size < 0:
            raise ShapeError(f"pad: dim {i} of size {shape[i]} padded by ({lo}, {hi}) is negative")
        shape[i] = size
    return out_type(types[0], tuple(shape))


def _pad(x: np.ndarray, *, pads: tuple[int, ...], value: float) -> np.ndarray:
    pairs = _pad_pairs(x.ndim, pads)
    # grow first, then crop the negative pads from the grown array (torch's order: pads of
    # (1, -1) on an empty dim give an empty dim, not one element)
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    fill = np.array(value).astype(x.dtype)
    grown = np.pad(x, grow, mode="constant", constant_values=fill)
    crop = tuple(
        slice(max(-lo, 0), max(grown.shape[i] - max(-hi, 0), max(-lo, 0)))
        for i, (lo, hi) in enumerate(pairs)
    )
    return grown[crop]


def _slice_twin(torch: Any, x: Any, *, axis: int, start: int, end: int | None, step: int) -> Any:
    index = [slice(None)] * x.dim()
    index[axis] = slice(start, end, step)
    return x[tuple(index)]


for _opdef in (
    shape_op(
        "concat",
        ("*xs",),
        _concat_infer,
        _concat,
        "y = the inputs joined along `axis` (torch.cat; dtypes promote)",
        (Attr("axis", "int", 0),),
        conformance=grid(
            point(axis=0, shapes=((2, 3), (4, 3))),
            point("negative_axis", axis=-1, shapes=((2, 3), (2, 1), (2, 5))),
            point(axis=1, shapes=((1, 2, 3, 4), (1, 3, 3, 4))),
            point("empty", axis=0, shapes=((0, 3), (2, 3))),
            point("single", axis=0, shapes=((3,),)),
            point("promotion", axis=1, shapes=((2, 2), (2, 2)), dtypes=("i8", "f32")),
        ),
        torch_twin=lambda torch, *xs, axis: torch.cat(xs, dim=axis),
    ),
    shape_op(
        "split",
        ("x",),
        _split_infer,
        _split,
        "outputs k = x[..., sum(sizes[:k]) : sum(sizes[:k+1]), ...] along `axis` (covers chunk)",
        (Attr("axis", "int", 0), Attr("sizes", "ints", doc="one size per output")),
        num_outputs=-1,
        conformance=grid(
            point(axis=0, sizes=(2, 4), shapes=((6, 4),)),
            point(axis=1, sizes=(3, 3, 3), shapes=((3, 9),)),
            point("empty", axis=-2, sizes=(1, 0, 4), shapes=((2, 5, 2),)),
        ),
        torch_twin=lambda torch, x, axis, sizes: torch.split(x, list(sizes), dim=axis),
    ),
    shape_op(
        "slice",
        ("x",),
        _slice_infer,
        _slice,
        "y = x[start:end:step] along `axis`; negative start/end count from the end, out-of-range "
        "bounds clamp (Python/torch rules); step >= 1. On a symbolic dim, static bounds "
        "(`x[0:1]`, `x[-1:]`) assume the dim reaches them (checked when run)",
        (
            Attr("axis", "int"),
            Attr("start", "int", 0),
            Attr("end", "int?", None, "None: to the end"),
            Attr("step", "int", 1),
        ),
        conformance=grid(
            point("step", axis=0, start=2, end=8, step=2, shapes=((10, 4),)),
            point("negative_bounds", axis=0, start=-3, shapes=((10, 4),)),
            point("step", axis=1, start=1, end=-1, step=3, shapes=((3, 9),)),
            point("clamped_bounds", axis=-1, start=5, end=100, shapes=((3, 9),)),
            point("empty", axis=1, start=7, end=2, shapes=((3, 9),)),
        ),
        torch_twin=_slice_twin,
    ),
    shape_op(
        "narrow",
        ("x",),
        _narrow_infer,
        _narrow,
        "y = x[start : start + length] along `axis`, where `length` may be a symbolic dim "
        "(`position_table[:seq_len]`); the window must lie inside the dim",
        (
            Attr("axis", "int"),
            Attr("start", "int", 0),
            Attr("length", "dims", doc="(n,): an int or a symbolic dim name"),
        ),
        conformance=grid(
            point(axis=0, start=0, length=(6,), shapes=((10, 4),)),
            point("negative_axis", axis=-1, start=2, length=(7,), shapes=((3, 9),)),
            point("empty", axis=1, start=9, length=(0,), shapes=((3, 9),)),
        ),
        torch_twin=lambda torch, x, axis, start, length: x.narrow(axis, start, length[0]),
    ),
    shape_op(
        "pad",
        ("x",),
        _pad_infer,
        _pad,
        "constant padding as torch.nn.functional.pad: pads = (left, right) of the last dim, then "
        "of the one before...; padded cells hold `value` (cast to x's dtype); negative pads crop",
        (Attr("pads", "ints"), Attr("value", "float", 0.0)),
        conformance=grid(
            point(pads=(1, 1, 2, 0), shapes=((1, 2, 3, 4),)),
            point("value", pads=(2, 3), value=-1.5, shapes=((2, 5),), dtypes="f32"),
            point("negative_pads", pads=(-1, 1, 0, -2), shapes=((1, 2, 4, 4),)),
            point("outer_dim", pads=(0, 0, 0, 0, 1, 1), shapes=((2, 3, 4),)),
        ),
        torch_twin=lambda torch, x, pads, value: torch.nn.functional.pad(x, pads, value=value),
    ),
):
    register(_opdef)
