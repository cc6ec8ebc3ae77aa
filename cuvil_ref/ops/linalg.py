"""Linear algebra: ``matmul`` (torch.matmul) and ``linear`` (torch.nn.functional.linear).

Both operands must have the same dtype, as in PyTorch. Floats accumulate in float32 (f16/bf16
inputs are widened to f32, multiplied with BLAS, rounded back), integers in int64 and then wrap to
the operand type, which is what two's-complement accumulation in that type gives.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, Shape, TensorType, format_shape
from cuvil_ref.ops.grid import grid, point, torch_fn
from cuvil_ref.ops.registry import OpDef, register
from cuvil_ref.ops.shapes import broadcast_shapes

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a product is accumulated in: float32 for floats, int64 for integers."""
    if np.issubdtype(dtype, np.integer):
        return np.dtype(np.int64)
    return np.dtype(np.float32)


def _same_dtype(op: str, types: tuple[TensorType, ...]) -> DType:
    dtype = types[0].dtype
    for t in types[1:]:
        if t.dtype != dtype:
            shown = ", ".join(t.dtype.value for t in types)
            raise ShapeError(f"op '{op}' needs operands of one dtype, got {shown}; insert a cast")
    return dtype


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """Result shape of torch.matmul: 1-D operands get a dim prepended/appended and then removed;
    the batch dims (all but the last two) broadcast."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("matmul operands must have at least one dimension (use mul for scalars)")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"matmul contraction dims differ: [{format_shape(a)}] @ [{format_shape(b)}] "
            f"({a2[-1]} vs {b2[-2]})"
        )
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except ShapeError as exc:
        raise ShapeError(f"matmul batch dims do not broadcast: {exc}") from None
    out: list[Dim] = [*batch]
    if len(a) > 1:
        out.append(a2[-2])
    if len(b) > 1:
        out.append(b2[-1])
    return tuple(out)


def _matmul_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    dtype = _same_dtype("matmul", types)
    return (TensorType(matmul_shape(types[0].shape, types[1].shape), dtype),)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    acc = accumulator(a.dtype)
    with np.errstate(all="ignore"):
        out = np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False))
    return np.asarray(out).astype(a.dtype, copy=False)


register(
    OpDef(
        name="matmul",
        inputs=("a", "b"),
        infer=_matmul_infer,
        reference=_matmul,
        doc=(
            "y[..., i, j] = sum_k a[..., i, k] * b[..., k, j] (torch.matmul): a 1-D `a` is a row "
            "and a 1-D `b` a column, and that dim is removed from the result; batch dims "
            "broadcast. Same dtype on both sides; f32 accumulation for floats."
        ),
        category="linalg",
        dtypes=NUMERIC,
        family="matmul",
        torch_twin=torch_fn("matmul"),
        conformance=grid(
            point("2d", shapes=((3, 4), (4, 5))),
            point("batched", shapes=((2, 3, 4), (4, 5))),
            point("vector", shapes=((4,), (4,))),
            point("vector", shapes=((4,), (4, 3))),
            point("vector", shapes=((3, 4), (4,))),
            point("broadcast_batch", shapes=((2, 1, 3, 4), (3, 4, 2))),
            point("2d", shapes=((17, 33), (33, 9))),
            point("2d", shapes=((1, 1), (1, 1))),
            point("empty", shapes=((0, 4), (4, 3))),
            point("f16", shapes=((5, 6), (6, 3)), dtypes="f16"),
            point("edge", shapes=((4, 5), (5, 3)), values=("edge", "normal")),
        ),
    )
)


def _linear_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    dtype = _same_dtype("linear", types)
    x, w = types[0].shape, types[1].shape
    if len(w) != 2 or len(x) == 0:
        raise ShapeError(
            f"linear needs x of rank >= 1 and weight [out, in], got x [{format_shape(x)}] "
            f"and weight [{format_shape(w)}]"
        )
    if x[-1] != w[1]:
        raise ShapeError(
            f"linear: x has {x[-1]} features but weight [{format_shape(w)}] takes {w[1]}"
        )
    if len(types) == 3 and types[2].shape not in ((w[0],), ()):
        raise ShapeError(
            f"linear: bias must have shape [{w[0]}], got [{format_shape(types[2].shape)}]"
        )
    return (TensorType((*x[:-1], w[0]), dtype),)


def _linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    acc = accumulator(x.dtype)
    with np.errstate(all="ignore"):
        y = np.matmul(x.astype(acc, copy=False), weight.astype(acc, copy=False).T)
        if bias is not None:
            y = y + bias.astype(acc, copy=False)
    return np.asarray(y).astype(x.dtype, copy=False)


register(
    OpDef(
        name="linear",
        inputs=("x", "weight", "bias?"),
        infer=_linear_infer,
        reference=_linear,
        doc=(
            "y[..., o] = sum_i x[..., i] * weight[o, i] + bias[o] (torch.nn.functional.linear); "
            "weight is [out, in], bias optional. f32 accumulation for floats."
        ),
        category="linalg",
        dtypes=NUMERIC,
        family="linear",
        torch_twin=torch_fn("nn.functional.linear"),
        conformance=grid(
            point("bias", shapes=((2, 8), (5, 8), (5,)), consts=(1, 2)),
            point("bias", shapes=((3, 4, 7), (6, 7), (6,)), consts=(1, 2)),
            point("no_bias", shapes=((1, 33), (17, 33)), consts=(1,)),
            point("vector", shapes=((5,), (3, 5), (3,)), consts=(1, 2)),
            point("edge", shapes=((4, 5), (3, 5), (3,)), consts=(1, 2),
                  values=("edge", "normal", "normal")),
        ),
    )
)
