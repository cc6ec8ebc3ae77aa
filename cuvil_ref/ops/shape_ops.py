"""Shape manipulation: reshape, flatten, permute, transpose, concat, split, slice, squeeze,
unsqueeze, expand, pad — with PyTorch's rules for negative axes, -1 sizes and clamped slices.

Symbolic dims pass through whenever the result can still be written as one symbol or an int:
``reshape([batch, 512, 1, 1], (batch, -1))`` is ``[batch, 512]``, but flattening ``[batch, 3]``
would need the product ``batch*3`` and raises :class:`ShapeError`. References return numpy views
where numpy gives them (values are what matters, not strides).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType, promote
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, Shape, TensorType, format_shape
from cuvil_ref.ops.grid import NO_GRID, Conformance, grid, point, torch_fn
from cuvil_ref.ops.registry import Attr, InferFn, OpDef, ReferenceFn, register
from cuvil_ref.ops.shapes import normalize_axis, symbolic_numel


def _out(t: TensorType, shape: Shape) -> tuple[TensorType, ...]:
    return (TensorType(tuple(shape), t.dtype),)


def _monomial(n: int, syms: tuple[str, ...], what: str) -> Dim:
    """``n * prod(syms)`` as one dim, or ShapeError when it is not an int or a lone symbol."""
    if not syms:
        return n
    if len(syms) == 1 and n == 1:
        return syms[0]
    shown = "*".join([*([str(n)] if n != 1 else []), *syms])
    raise ShapeError(f"{what} would be {shown}, which a shape cannot hold; make those dims static")


def reshape_shape(shape: Shape, target: Shape) -> Shape:
    """Resolve a reshape target (at most one -1) against ``shape``, keeping symbols."""
    if sum(1 for d in target if d == -1) > 1 or any(isinstance(d, int) and d < -1 for d in target):
        raise ShapeError(f"reshape target ({format_shape(target)}) may hold one -1 and sizes >= 0")
    n_in, s_in = symbolic_numel(shape)
    known = [d for d in target if d != -1]
    n_t, s_t = symbolic_numel(known)
    what = f"reshape of [{format_shape(shape)}] to ({format_shape(target)})"
    if -1 not in target:
        if (n_in, s_in) != (n_t, s_t):
            raise ShapeError(f"{what}: element counts differ")
        return tuple(target)
    rest = list(s_in)
    for s in s_t:
        if s not in rest:
            raise ShapeError(f"{what}: symbol '{s}' is not a factor of the input size")
        rest.remove(s)
    if n_t == 0 or n_in % n_t != 0:
        raise ShapeError(f"{what}: -1 cannot be inferred ({n_in} elements into parts of {n_t})")
    inferred = _monomial(n_in // n_t, tuple(rest), f"{what}: the -1 dim")
    return tuple(inferred if d == -1 else d for d in target)


def _reshape_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    return _out(types[0], reshape_shape(types[0].shape, attrs["shape"]))


def _reshape(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape)


def _flatten_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    if not shape:
        return _out(types[0], (1,))  # torch.flatten of a 0-d tensor is 1-d
    a = normalize_axis(attrs["start_dim"], len(shape))
    b = normalize_axis(attrs["end_dim"], len(shape))
    if a > b:
        raise ShapeError(
            f"flatten: start_dim {attrs['start_dim']} is after end_dim "
            f"{attrs['end_dim']} for rank {len(shape)}"
        )
    n, syms = symbolic_numel(shape[a : b + 1])
    merged = _monomial(n, syms, f"flatten of dims {a}..{b} of [{format_shape(shape)}]")
    return _out(types[0], (*shape[:a], merged, *shape[b + 1 :]))


def _flatten(x: np.ndarray, *, start_dim: int, end_dim: int) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(1)
    a, b = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(
        *x.shape[:a], -1 if x.size else int(np.prod(x.shape[a : b + 1])), *x.shape[b + 1 :]
    )


def _permute_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    perm = [normalize_axis(p, len(shape)) for p in attrs["perm"]]
    if sorted(perm) != list(range(len(shape))):
        raise ShapeError(f"permute: {attrs['perm']} is not a permutation of {len(shape)} dims")
    return _out(types[0], tuple(shape[p] for p in perm))


def _transpose_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = list(types[0].shape)
    a, b = (normalize_axis(attrs[k], max(len(shape), 1)) for k in ("dim0", "dim1"))
    if shape:
        shape[a], shape[b] = shape[b], shape[a]
    return _out(types[0], tuple(shape))


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
            return _out(types[0], tuple(shape))
        if start < 0 and open_end:  # the last -start rows: x[-1:]
            shape[axis] = len(range(0, -start, step))
        elif start >= 0 and not open_end and end >= start:  # x[0:1]: assumes dim >= end
            shape[axis] = len(range(start, end, step))
        else:
            raise ShapeError(
                f"slice [{start}:{end}:{step}] of symbolic dim '{dim}' (axis {axis}) has no "
                "static size"
            )
        return _out(types[0], tuple(shape))
    shape[axis] = len(range(*slice(start, end, step).indices(dim)))
    return _out(types[0], tuple(shape))


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
    return _out(types[0], tuple(shape))


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


def _squeeze_axes(shape: Shape, axes: tuple[int, ...] | None) -> list[int]:
    if axes is None:
        if any(isinstance(d, str) for d in shape):
            raise ShapeError(
                f"squeeze of [{format_shape(shape)}] without axes: symbolic dims "
                "may or may not be 1; give the axes"
            )
        return [i for i, d in enumerate(shape) if d == 1]
    picked = sorted({normalize_axis(a, max(len(shape), 1)) for a in axes})
    for i in picked:
        if i < len(shape) and isinstance(shape[i], str):
            raise ShapeError(f"squeeze of symbolic dim '{shape[i]}' (axis {i}) is ambiguous")
    # As torch: a listed dim whose size is not 1 is left alone.
    return [i for i in picked if i < len(shape) and shape[i] == 1]


def _squeeze_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    drop = set(_squeeze_axes(shape, attrs["axes"]))
    return _out(types[0], tuple(d for i, d in enumerate(shape) if i not in drop))


def _squeeze(x: np.ndarray, *, axes: tuple[int, ...] | None) -> np.ndarray:
    return np.squeeze(x, axis=tuple(_squeeze_axes(x.shape, axes)))


def _unsqueeze_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    axis = normalize_axis(attrs["axis"], len(shape), allow_end=True)
    return _out(types[0], (*shape[:axis], 1, *shape[axis:]))


def _unsqueeze(x: np.ndarray, *, axis: int) -> np.ndarray:
    return np.expand_dims(x, axis % (x.ndim + 1))


def expand_shape(shape: Shape, target: Shape) -> Shape:
    """torch.Tensor.expand: -1 keeps a dim, size-1 dims stretch, new dims are prepended."""
    if len(target) < len(shape):
        raise ShapeError(
            f"expand to ({format_shape(target)}) has fewer dims than [{format_shape(shape)}]"
        )
    lead = len(target) - len(shape)
    out: list[Dim] = []
    for i, t in enumerate(target):
        d = shape[i - lead] if i >= lead else None
        if t == -1:
            if d is None:
                raise ShapeError(f"expand: -1 is not allowed for new leading dim {i}")
            out.append(d)
        elif d is None or d == 1 or d == t:
            if isinstance(t, int) and t < 0:
                raise ShapeError(f"expand: size {t} is invalid")
            out.append(t)
        else:
            raise ShapeError(
                f"expand of [{format_shape(shape)}] to ({format_shape(target)}): "
                f"dim {i} is {d}, not 1"
            )
    return tuple(out)


def _expand_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    return _out(types[0], expand_shape(types[0].shape, attrs["shape"]))


def _expand(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(x, expand_shape(x.shape, shape))


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
    return _out(types[0], tuple(shape))


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


def _permute(x: np.ndarray, *, perm: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, perm)


def _transpose(x: np.ndarray, *, dim0: int, dim1: int) -> np.ndarray:
    return np.swapaxes(x, dim0, dim1) if x.ndim else x


def _shape_op(
    name: str,
    inputs: tuple[str, ...],
    infer: InferFn,
    reference: ReferenceFn,
    doc: str,
    attrs: tuple[Attr, ...] = (),
    num_outputs: int = 1,
    *,
    conformance: Conformance = NO_GRID,
    torch_twin: Any = None,
) -> OpDef:
    return OpDef(
        name,
        inputs,
        infer,
        reference,
        doc,
        attrs,
        category="shape",
        num_outputs=num_outputs,
        conformance=conformance,
        torch_twin=torch_twin,
    )


def _slice_twin(torch: Any, x: Any, *, axis: int, start: int, end: int | None, step: int) -> Any:
    index = [slice(None)] * x.dim()
    index[axis] = slice(start, end, step)
    return x[tuple(index)]


for _opdef in (
    _shape_op(
        "reshape",
        ("x",),
        _reshape_infer,
        _reshape,
        "y = x with shape `shape` (row-major order kept); one -1 is inferred; symbols allowed",
        (Attr("shape", "dims", doc="target shape; ints, symbol names, one -1"),),
        conformance=grid(
            point(shape=(6, 4), shapes=((2, 3, 4),)),
            point("infer_dim", shape=(-1,), shapes=((2, 3, 4),)),
            point("infer_dim", shape=(4, -1, 2), shapes=((2, 3, 4),)),
            point("empty", shape=(3, 0), shapes=((0, 3),)),
            point("rank0", shape=(1, 1), shapes=((),)),
        ),
        torch_twin=lambda torch, x, shape: x.reshape(shape),
    ),
    _shape_op(
        "flatten",
        ("x",),
        _flatten_infer,
        _flatten,
        "y = x with dims start_dim..end_dim merged into one (torch.flatten)",
        (Attr("start_dim", "int", 0), Attr("end_dim", "int", -1)),
        conformance=grid(
            point(start_dim=1, shapes=((2, 3, 4, 5),)),
            point(shapes=((2, 3, 4),)),
            point("range", start_dim=1, end_dim=2, shapes=((2, 3, 4, 5),)),
            point("negative_dims", start_dim=-2, end_dim=-1, shapes=((2, 3, 4),)),
        ),
        torch_twin=torch_fn("flatten"),
    ),
    _shape_op(
        "permute",
        ("x",),
        _permute_infer,
        _permute,
        "y.shape[i] = x.shape[perm[i]]; y[idx] = x[idx permuted back]",
        (Attr("perm", "ints", doc="a permutation of the dims (negative allowed)"),),
        conformance=grid(
            point(perm=(2, 0, 1), shapes=((2, 3, 4),)),
            point(perm=(0, 2, 3, 1), shapes=((1, 3, 5, 4),)),
            point("rank5", perm=(4, 3, 2, 1, 0), shapes=((2, 3, 1, 2, 2),)),
        ),
        torch_twin=lambda torch, x, perm: x.permute(*perm),
    ),
    _shape_op(
        "transpose",
        ("x",),
        _transpose_infer,
        _transpose,
        "y = x with dims dim0 and dim1 swapped",
        (Attr("dim0", "int"), Attr("dim1", "int")),
        conformance=grid(
            point(dim0=0, dim1=1, shapes=((3, 5),)),
            point("negative_dims", dim0=-1, dim1=0, shapes=((2, 3, 4),)),
            point(dim0=1, dim1=2, shapes=((2, 3, 4, 5),)),
        ),
        torch_twin=lambda torch, x, dim0, dim1: x.transpose(dim0, dim1),
    ),
    _shape_op(
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
    _shape_op(
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
    _shape_op(
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
    _shape_op(
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
    _shape_op(
        "squeeze",
        ("x",),
        _squeeze_infer,
        _squeeze,
        "y = x without the listed size-1 dims (None: all size-1 dims); listed dims whose size "
        "is not 1 are kept, as torch does",
        (Attr("axes", "ints?", None),),
        conformance=grid(
            point(shapes=((1, 3, 1, 4),)),
            point("axes", axes=(0,), shapes=((1, 3, 1, 4),)),
            point("axes", axes=(-2,), shapes=((1, 3, 1, 4),)),
            point("not_one", axes=(0,), shapes=((2, 3),)),
        ),
        torch_twin=lambda torch, x, axes: x.squeeze() if axes is None else x.squeeze(axes),
    ),
    _shape_op(
        "unsqueeze",
        ("x",),
        _unsqueeze_infer,
        _unsqueeze,
        "y = x with a size-1 dim inserted at `axis` (in [-rank-1, rank])",
        (Attr("axis", "int"),),
        conformance=grid(
            point(axis=0, shapes=((3, 4),)),
            point("negative_axis", axis=-1, shapes=((3, 4),)),
            point("rank0", axis=0, shapes=((),)),
            point(axis=1, shapes=((3, 4),)),
        ),
        torch_twin=lambda torch, x, axis: x.unsqueeze(axis),
    ),
    _shape_op(
        "expand",
        ("x",),
        _expand_infer,
        _expand,
        "y = x broadcast to `shape` (torch.expand: -1 keeps a dim, only size-1 dims stretch, new "
        "dims are prepended)",
        (Attr("shape", "dims", doc="target shape; -1 keeps"),),
        conformance=grid(
            point(shape=(3, 4), shapes=((3, 1),)),
            point("new_dims", shape=(2, 3, 4), shapes=((1, 4),)),
            point("keep", shape=(-1, 5), shapes=((3, 1),)),
            point("rank0", shape=(2, 2), shapes=((),)),
        ),
        torch_twin=lambda torch, x, shape: x.expand(*shape),
    ),
    _shape_op(
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
