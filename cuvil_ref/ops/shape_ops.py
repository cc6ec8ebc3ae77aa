"""Shape manipulation: reshape, flatten, permute, transpose, squeeze, unsqueeze, expand -- with
PyTorch's rules for negative axes and -1 sizes (joining and cropping: :mod:`.join_crop`).

Symbolic dims pass through whenever the result can still be written as one symbol or an int:
``reshape([batch, 512, 1, 1], (batch, -1))`` is ``[batch, 512]``, but flattening ``[batch, 3]``
would need the product ``batch*3`` and raises :class:`ShapeError`. References return numpy views
where numpy gives them (values are what matters, not strides).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, Shape, TensorType, format_shape
from cuvil_ref.ops.grid import NO_GRID, Conformance, grid, point, torch_fn
from cuvil_ref.ops.registry import Attr, InferFn, OpDef, ReferenceFn, register
from cuvil_ref.ops.shapes import normalize_axis, symbolic_numel


def out_type(t: TensorType, shape: Shape) -> tuple[TensorType, ...]:
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
    return out_type(types[0], reshape_shape(types[0].shape, attrs["shape"]))


def _reshape(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape)


def _flatten_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    if not shape:
        return out_type(types[0], (1,))  # torch.flatten of a 0-d tensor is 1-d
    a = normalize_axis(attrs["start_dim"], len(shape))
    b = normalize_axis(attrs["end_dim"], len(shape))
    if a > b:
        raise ShapeError(
            f"flatten: start_dim {attrs['start_dim']} is after end_dim "
            f"{attrs['end_dim']} for rank {len(shape)}"
        )
    n, syms = symbolic_numel(shape[a : b + 1])
    merged = _monomial(n, syms, f"flatten of dims {a}..{b} of [{format_shape(shape)}]")
    return out_type(types[0], (*shape[:a], merged, *shape[b + 1 :]))


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
    return out_type(types[0], tuple(shape[p] for p in perm))


def _transpose_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = list(types[0].shape)
    a, b = (normalize_axis(attrs[k], max(len(shape), 1)) for k in ("dim0", "dim1"))
    if shape:
        shape[a], shape[b] = shape[b], shape[a]
    return out_type(types[0], tuple(shape))


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
    return out_type(types[0], tuple(d for i, d in enumerate(shape) if i not in drop))


def _squeeze(x: np.ndarray, *, axes: tuple[int, ...] | None) -> np.ndarray:
    return np.squeeze(x, axis=tuple(_squeeze_axes(x.shape, axes)))


def _unsqueeze_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    shape = types[0].shape
    axis = normalize_axis(attrs["axis"], len(shape), allow_end=True)
    return out_type(types[0], (*shape[:axis], 1, *shape[axis:]))


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
    return out_type(types[0], expand_shape(types[0].shape, attrs["shape"]))


def _expand(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(x, expand_shape(x.shape, shape))


def _permute(x: np.ndarray, *, perm: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, perm)


def _transpose(x: np.ndarray, *, dim0: int, dim1: int) -> np.ndarray:
    return np.swapaxes(x, dim0, dim1) if x.ndim else x


def shape_op(
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


for _opdef in (
    shape_op(
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
    shape_op(
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
    shape_op(
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
    shape_op(
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
    shape_op(
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
    shape_op(
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
    shape_op(
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
):
    register(_opdef)
