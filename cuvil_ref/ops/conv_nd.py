"""3-D convolution and transposed convolution over 1, 2 or 3 spatial dims (torch.nn.functional
``conv3d`` and ``conv_transpose1d/2d/3d``).

2-D convolution keeps its own fast op (``conv2d``, in ``conv.py``): the frontend also maps 1-d
convolution onto it. The references here loop over kernel taps only; each tap is one grouped GEMM
over all output positions (a strided view of the padded input for ``conv3d``; a strided
scatter-add into the output for ``conv_transpose``). Floats accumulate in float32 (float64 for
f64 inputs), integers in int64 and wrap to the input dtype, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register

NUMERIC = frozenset(ALL_DTYPES - {DType.bool})


def accumulator(dtype: np.dtype) -> np.dtype:
    """int64 for integers, float64 for f64, float32 for the other floats."""
    if np.issubdtype(dtype, np.integer):
        return np.dtype(np.int64)
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _check_operands(op: str, types: tuple[TensorType, ...], spatial: int | None) -> int:
    """Checks dtypes and ranks; returns the number of spatial dims."""
    x, w = types[0], types[1]
    if x.dtype != w.dtype or (len(types) == 3 and types[2].dtype != x.dtype):
        raise ShapeError(f"{op}: x, weight and bias must share one dtype; insert a cast")
    k = w.rank - 2
    if (spatial is not None and k != spatial) or k not in (1, 2, 3) or x.rank != w.rank:
        want = f"{spatial}" if spatial is not None else "1, 2 or 3"
        raise ShapeError(
            f"{op} takes x [N, C, *spatial] and weight of the same rank with {want} spatial "
            f"dims, got [{format_shape(x.shape)}] and [{format_shape(w.shape)}]"
        )
    if not all(isinstance(d, int) for d in w.shape):
        raise ShapeError(f"{op}: weight shape must be static, got [{format_shape(w.shape)}]")
    if not all(isinstance(d, int) for d in x.shape[1:]):
        raise ShapeError(f"{op}: channel and spatial dims must be static, got {x}")
    return k


def _check_ints(op: str, attrs: FrozenDict, lengths: dict[str, int], low: dict[str, int]) -> None:
    for name, n in lengths.items():
        value = attrs[name]
        if len(value) != n:
            raise ShapeError(f"op '{op}': {name} needs {n} ints, got {value}")
        if any(v < low[name] for v in value):
            raise ShapeError(f"op '{op}': {name} values must be >= {low[name]}, got {value}")


# --- conv3d -----------------------------------------------------------------------------------


def _conv3d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    _check_operands("conv3d", types, 3)
    _check_ints(
        "conv3d",
        attrs,
        {"stride": 3, "padding": 6, "dilation": 3},
        {"stride": 1, "padding": 0, "dilation": 1},
    )
    x, w = types[0], types[1]
    n, c, *size = x.shape
    o, cg, *kernel = w.shape
    groups = attrs["groups"]
    if groups < 1 or c != cg * groups or o % groups != 0 or c == 0:
        raise ShapeError(
            f"conv3d: x has {c} channels, weight [{format_shape(w.shape)}] with groups={groups} "
            f"needs {cg * groups} (> 0) and an output count divisible by groups"
        )
    if len(types) == 3 and types[2].shape != (o,):
        raise ShapeError(
            f"conv3d: bias must have shape [{o}], got [{format_shape(types[2].shape)}]"
        )
    out = _conv_out(size, kernel, attrs["stride"], attrs["padding"], attrs["dilation"])
    return (TensorType((n, o, *out), x.dtype),)


def _conv_out(
    size: Sequence[Dim],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[int, ...]:
    k = len(kernel)
    out = []
    for i in range(k):
        span = dilation[i] * (kernel[i] - 1) + 1
        total = int(size[i]) + padding[i] + padding[k + i] - span
        if total < 0:
            raise ShapeError(
                f"a kernel of extent {span} does not fit spatial dim {i} of size {size[i]} with "
                f"padding ({padding[i]}, {padding[k + i]})"
            )
        out.append(total // stride[i] + 1)
    return tuple(out)


def conv_nd(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> np.ndarray:
    """Grouped convolution over any number of spatial dims; ``padding`` is (lo..., hi...)."""
    acc = accumulator(x.dtype)
    n, c, *size = x.shape
    o, cg, *kernel = weight.shape
    k = len(kernel)
    out = _conv_out(size, kernel, stride, padding, dilation)
    if n * o * int(np.prod(out)) == 0:
        return np.zeros((n, o, *out), dtype=x.dtype)
    xp = np.zeros((n, c, *(s + padding[i] + padding[k + i] for i, s in enumerate(size))), acc)
    xp[
        (slice(None), slice(None), *(slice(padding[i], padding[i] + s) for i, s in enumerate(size)))
    ] = x
    wg = weight.astype(acc, copy=False).reshape(groups, o // groups, cg, *kernel)
    y = np.zeros((n, groups, o // groups, int(np.prod(out))), dtype=acc)
    with np.errstate(all="ignore"):  # NaN/Inf propagate silently, as in torch
        for tap in itertools.product(*(range(kk) for kk in kernel)):
            view = xp[
                (
                    slice(None),
                    slice(None),
                    *(
                        slice(
                            t * dilation[i],
                            t * dilation[i] + (out[i] - 1) * stride[i] + 1,
                            stride[i],
                        )
                        for i, t in enumerate(tap)
                    ),
                )
            ]
            cols = view.reshape(n, groups, cg, -1)
            y += np.matmul(wg[(slice(None), slice(None), slice(None), *tap)][None], cols)
        y = y.reshape(n, o, *out)
        if bias is not None:
            y += bias.astype(acc, copy=False).reshape(o, *([1] * k))
    return y.astype(x.dtype, copy=False)


def _conv3d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    return conv_nd(x, weight, bias, stride, padding, dilation, groups)


register(
    OpDef(
        name="conv3d",
        conformance=grid(
            point("basic", shapes=((1, 2, 5, 5, 5), (3, 2, 3, 3, 3), (3,)), consts=(1, 2),
                  padding=(1, 1, 1, 1, 1, 1)),
            point("groups", shapes=((2, 4, 6, 5, 7), (4, 2, 2, 3, 2), (4,)), consts=(1, 2),
                  stride=(2, 1, 2), padding=(0, 1, 0, 1, 0, 1), dilation=(1, 2, 1), groups=2),
            point("groups", shapes=((1, 3, 4, 4, 4), (3, 1, 1, 1, 1), (3,)), consts=(1, 2),
                  groups=3, label="depthwise"),
        ),  # fmt: skip
        inputs=("x", "weight", "bias?"),
        attrs=(
            Attr("stride", "ints", (1, 1, 1), "(sd, sh, sw)"),
            Attr(
                "padding",
                "ints",
                (0, 0, 0, 0, 0, 0),
                "zero padding (front, top, left, back, bottom, right)",
            ),
            Attr("dilation", "ints", (1, 1, 1), "(dd, dh, dw)"),
            Attr("groups", "int", 1, "input and output channels split into this many groups"),
        ),
        infer=_conv3d_infer,
        reference=_conv3d,
        doc=(
            "y[n, o, p, q, r] = bias[o] + sum_{c, i, j, l} xpad[n, g*Cg + c, p*sd + i*dd, "
            "q*sh + j*dh, r*sw + l*dw] * weight[o, c, i, j, l], g = o // (O/groups), "
            "Cg = C/groups; x NCDHW, weight OIDHW; OD = (D + front + back - dd*(KD-1) - 1) // sd "
            "+ 1 (likewise OH, OW). Floats accumulate in f32 (f64 for f64), integers in i64 then "
            "wrap."
        ),
        category="conv",
        dtypes=NUMERIC,
    )
)


# --- conv_transpose ---------------------------------------------------------------------------


def _transpose_out(
    size: Sequence[Dim],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[int, ...]:
    out = []
    for i, s in enumerate(size):
        length = (
            (int(s) - 1) * stride[i]
            - 2 * padding[i]
            + dilation[i] * (kernel[i] - 1)
            + output_padding[i]
            + 1
        )
        if length < 0:
            raise ShapeError(
                f"conv_transpose: spatial dim {i} of size {s} gives a negative output size "
                f"{length} (padding {padding[i]} is too large)"
            )
        out.append(length)
    return tuple(out)


def _conv_transpose_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict
) -> tuple[TensorType, ...]:
    k = _check_operands("conv_transpose", types, None)
    names = ("stride", "padding", "output_padding", "dilation")
    _check_ints(
        "conv_transpose",
        attrs,
        dict.fromkeys(names, k),
        {"stride": 1, "padding": 0, "output_padding": 0, "dilation": 1},
    )
    for i, (op, s, d) in enumerate(
        zip(attrs["output_padding"], attrs["stride"], attrs["dilation"], strict=True)
    ):
        if op >= s and op >= d:
            raise ShapeError(
                f"conv_transpose: output_padding {op} in dim {i} must be smaller than the stride "
                f"{s} or the dilation {d} (as in PyTorch)"
            )
    x, w = types[0], types[1]
    n, c, *size = x.shape
    cin, og, *kernel = w.shape
    groups = attrs["groups"]
    if groups < 1 or c != cin or c % groups != 0 or c == 0:
        raise ShapeError(
            f"conv_transpose: x has {c} channels; weight [{format_shape(w.shape)}] needs {cin} "
            f"(> 0, divisible by groups={groups})"
        )
    o = og * groups
    if len(types) == 3 and types[2].shape != (o,):
        raise ShapeError(
            f"conv_transpose: bias must have shape [{o}], got [{format_shape(types[2].shape)}]"
        )
    out = _transpose_out(
        size, kernel, attrs["stride"], attrs["padding"], attrs["output_padding"], attrs["dilation"]
    )
    return (TensorType((n, o, *out), x.dtype),)


def _conv_transpose(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    acc = accumulator(x.dtype)
    n, c, *size = x.shape
    _, og, *kernel = weight.shape
    k, cg, o = len(kernel), c // groups, og * groups
    out = _transpose_out(size, kernel, stride, padding, output_padding, dilation)
    if n * o * int(np.prod(out)) == 0:
        return np.zeros((n, o, *out), dtype=x.dtype)
    # The full (uncropped) output: input position p and tap t land on p*stride + t*dilation.
    full = [
        (s - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
        for i, s in enumerate(size)
    ]
    buf = np.zeros((n, groups, og, *full), dtype=acc)
    cols = x.astype(acc, copy=False).reshape(n, groups, cg, -1)
    # [G, Og, Cg, *K]: weight[g*Cg + c, j, *t] is tap t's map from input channel c to output j.
    wg = weight.astype(acc, copy=False).reshape(groups, cg, og, *kernel).swapaxes(1, 2)
    with np.errstate(all="ignore"):
        for tap in itertools.product(*(range(kk) for kk in kernel)):
            part = np.matmul(wg[(slice(None), slice(None), slice(None), *tap)][None], cols)
            dest = (
                slice(None),
                slice(None),
                slice(None),
                *(
                    slice(
                        t * dilation[i], t * dilation[i] + (size[i] - 1) * stride[i] + 1, stride[i]
                    )
                    for i, t in enumerate(tap)
                ),
            )
            buf[dest] += part.reshape(n, groups, og, *size)
        y = buf.reshape(n, o, *full)[
            (slice(None), slice(None), *(slice(padding[i], padding[i] + out[i]) for i in range(k)))
        ]
        if bias is not None:
            y = y + bias.astype(acc, copy=False).reshape(o, *([1] * k))
    return np.ascontiguousarray(y).astype(x.dtype, copy=False)


register(
    OpDef(
        name="conv_transpose",
        conformance=grid(
            point("basic", shapes=((1, 4, 5, 5), (4, 3, 3, 3), (3,)), consts=(1, 2),
                  stride=(2, 2), padding=(1, 1), output_padding=(1, 1), dilation=(1, 1)),
            point("groups", shapes=((2, 4, 7), (4, 2, 3), (4,)), consts=(1, 2), stride=(2,),
                  padding=(0,), output_padding=(1,), dilation=(1,), groups=2),
            point("dilation", shapes=((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (2,)), consts=(1, 2),
                  stride=(1, 2, 1), padding=(0, 1, 0), output_padding=(0, 1, 0),
                  dilation=(2, 1, 1)),
        ),  # fmt: skip
        inputs=("x", "weight", "bias?"),
        attrs=(
            Attr("stride", "ints", doc="one per spatial dim"),
            Attr("padding", "ints", doc="one per spatial dim: cropped from both ends"),
            Attr("output_padding", "ints", doc="one per spatial dim: extra size at the end"),
            Attr("dilation", "ints", doc="one per spatial dim"),
            Attr("groups", "int", 1, "input and output channels split into this many groups"),
        ),
        infer=_conv_transpose_infer,
        reference=_conv_transpose,
        doc=(
            "Transposed convolution over 1, 2 or 3 spatial dims (the weight's rank says which): "
            "x [N, C, *S], weight [C, O/groups, *K]. full[n, g*Og + j, p*s + t*d] += "
            "sum_c x[n, g*Cg + c, p] * weight[g*Cg + c, j, t] over input positions p and taps t "
            "(per dim), y = full cropped to [padding, padding + OS) plus bias; OS = (S-1)*s - "
            "2*padding + d*(K-1) + output_padding + 1. Floats accumulate in f32 (f64 for f64), "
            "integers in i64 then wrap."
        ),
        category="conv",
        dtypes=NUMERIC,
    )
)
