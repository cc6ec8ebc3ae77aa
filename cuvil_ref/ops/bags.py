"""Reductions over index-defined groups and sliding-block folding: ``embedding_bag``
(torch.nn.functional.embedding_bag) and ``col2im`` (torch.nn.functional.fold).

``embedding_bag`` sums, averages or takes the maximum of the embedding rows of each bag; the bags
are consecutive runs of ``indices`` that start at ``offsets`` (data), so the output's shape --
one row per bag -- depends only on the shapes. ``col2im`` is the adjoint of im2col: every column
of sliding-block values is added back at the block's position.
"""

from __future__ import annotations

import itertools

import numpy as np

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, register

FLOATS = frozenset({DType.f64, DType.f32, DType.f16, DType.bf16})
INDEX = frozenset({DType.i32, DType.i64})


def _bag_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    weight, indices, offsets = types[:3]
    if indices.dtype not in INDEX or offsets.dtype not in INDEX:
        raise ShapeError("op 'embedding_bag': indices and offsets must be i32 or i64")
    if weight.rank != 2 or indices.rank != 1 or offsets.rank != 1:
        raise ShapeError(
            "op 'embedding_bag' takes weight [rows, dim], 1-d indices and 1-d offsets, got "
            f"[{format_shape(weight.shape)}], [{format_shape(indices.shape)}] and "
            f"[{format_shape(offsets.shape)}]"
        )
    if len(types) == 4:
        if attrs["mode"] != "sum":
            raise ShapeError("op 'embedding_bag': per_sample_weights need mode='sum'")
        if types[3].dtype != weight.dtype or types[3].shape != indices.shape:
            raise ShapeError(
                "op 'embedding_bag': per_sample_weights must match indices' shape and the "
                f"weight's dtype, got {types[3]}"
            )
    bags = offsets.shape[0]
    if attrs["include_last_offset"]:
        if not isinstance(bags, int):
            raise ShapeError("op 'embedding_bag': include_last_offset needs static offsets")
        bags = max(bags - 1, 0)
    return (TensorType((bags, weight.shape[1]), weight.dtype),)


def _embedding_bag(
    weight: np.ndarray,
    indices: np.ndarray,
    offsets: np.ndarray,
    per_sample_weights: np.ndarray | None = None,
    *,
    mode: str,
    include_last_offset: bool,
    padding_idx: int | None,
) -> np.ndarray:
    rows, dim = weight.shape
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        bad = indices[(indices < 0) | (indices >= rows)][0]
        raise InterpretError(f"op 'embedding_bag': index {bad} is out of range [0, {rows})")
    starts = offsets.astype(np.int64)
    if starts.size and starts[0] != 0:
        raise InterpretError(f"op 'embedding_bag': offsets[0] must be 0, got {starts[0]}")
    ends = np.append(starts[1:], len(indices))
    if include_last_offset:
        starts, ends = starts[:-1], starts[1:]
    if np.any(ends < starts) or (ends.size and ends.max() > len(indices)):
        raise InterpretError("op 'embedding_bag': offsets must be increasing and within indices")
    acc = np.float64 if weight.dtype == np.float64 else np.float32
    out = np.zeros((len(starts), dim), dtype=acc)
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        picks = indices[s:e]
        keep = picks != padding_idx if padding_idx is not None else np.ones(len(picks), bool)
        vals = weight[picks[keep]].astype(acc)
        if per_sample_weights is not None:
            vals = vals * per_sample_weights[s:e][keep].astype(acc)[:, None]
        if len(vals) == 0:
            continue  # an empty bag (or one of padding only) gives zeros
        with np.errstate(all="ignore"):
            if mode == "max":  # torch's scan: a later row wins only if strictly greater
                best = vals[0]
                for row in vals[1:]:
                    best = np.where(row > best, row, best)
                out[b] = best
            else:
                total = np.add.reduce(vals, axis=0)
                out[b] = total / len(vals) if mode == "mean" else total
    return out.astype(weight.dtype, copy=False)


register(
    OpDef(
        name="embedding_bag",
        conformance=grid(
            # offsets are sorted and may repeat: an empty bag gives zeros
            point("basic", shapes=((7, 3), (9,), (4,)), dtypes=("f32", "i64", "i64"),
                  values=("normal", "index:7", "offsets:9"), consts=(0,), mode="sum"),
            point("padding_idx", shapes=((7, 3), (9,), (4,)), dtypes=("f32", "i64", "i64"),
                  values=("normal", "index:7", "offsets:9"), consts=(0,), mode="mean",
                  padding_idx=2),
            point("max", shapes=((7, 3), (9,), (4,)), dtypes=("f32", "i64", "i64"),
                  values=("normal", "index:7", "offsets:9"), consts=(0,), mode="max"),
            point("include_last_offset", shapes=((7, 3), (9,), (5,), (9,)),
                  dtypes=("f32", "i64", "i64", "f32"),
                  values=("normal", "index:7", "offsets:9", "normal"), consts=(0,),
                  mode="sum", include_last_offset=True, label="weighted"),
        ),  # fmt: skip
        inputs=("weight", "indices", "offsets", "per_sample_weights?"),
        attrs=(
            Attr("mode", "str", "mean", choices=("sum", "mean", "max")),
            Attr("include_last_offset", "bool", False, "offsets ends with the end of the last bag"),
            Attr("padding_idx", "int?", None, "entries equal to it are left out of every bag"),
        ),
        infer=_bag_infer,
        reference=_embedding_bag,
        doc=(
            "y[b] = reduce over k in [offsets[b], offsets[b+1]) (the last bag runs to the end of "
            "indices, unless include_last_offset) of weight[indices[k]] (times "
            "per_sample_weights[k] in mode 'sum'); entries equal to padding_idx are skipped; an "
            "empty bag gives zeros; mean divides by the bag's count; max scans the bag in order "
            "and takes a row's value where it is strictly greater (NaN only from the first "
            "row), as PyTorch's CPU kernel. Sums in f32 (f64 for f64)."
        ),
        category="indexing",
        dtypes=FLOATS | INDEX,
    )
)


def _col2im_geometry(
    attrs: FrozenDict,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    out = tuple(attrs["output_size"])
    kernel, dilation, padding, stride = (
        tuple(attrs[n]) for n in ("kernel", "dilation", "padding", "stride")
    )
    for name, v, low in (
        ("output_size", out, 1),
        ("kernel", kernel, 1),
        ("dilation", dilation, 1),
        ("padding", padding, 0),
        ("stride", stride, 1),
    ):
        if len(v) != 2 or min(v) < low:
            raise ShapeError(f"op 'col2im': {name} must be 2 ints >= {low}, got {v}")
    return out, kernel, dilation, padding, stride  # type: ignore[return-value]


def _blocks(out: tuple[int, int], kernel, dilation, padding, stride) -> tuple[int, int]:  # noqa: ANN001
    return tuple(  # type: ignore[return-value]
        (out[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i in range(2)
    )


def _col2im_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x = types[0]
    out, kernel, dilation, padding, stride = _col2im_geometry(attrs)
    if x.rank not in (2, 3):
        raise ShapeError(f"op 'col2im' takes [N, C*KH*KW, L] or [C*KH*KW, L], got {x}")
    cols, length = x.shape[-2], x.shape[-1]
    taps = kernel[0] * kernel[1]
    bh, bw = _blocks(out, kernel, dilation, padding, stride)
    if not isinstance(cols, int) or cols % taps != 0 or length != bh * bw or min(bh, bw) < 1:
        raise ShapeError(
            f"op 'col2im': input [{format_shape(x.shape)}] needs C*{taps} rows and {bh}*{bw} "
            f"blocks for output {out}, kernel {kernel}, dilation {dilation}, padding {padding}, "
            f"stride {stride}"
        )
    return (TensorType((*x.shape[:-2], cols // taps, *out), x.dtype),)


def _col2im(
    x: np.ndarray,
    *,
    output_size: tuple[int, int],
    kernel: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int],
    stride: tuple[int, int],
) -> np.ndarray:
    batch = x.shape[:-2]
    acc = np.float64 if x.dtype == np.float64 else np.float32
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    bh, bw = _blocks(output_size, kernel, dilation, padding, stride)
    c = x.shape[-2] // (kh * kw)
    cols = x.astype(acc, copy=False).reshape(*batch, c, kh, kw, bh, bw)
    buf = np.zeros((*batch, c, output_size[0] + 2 * ph, output_size[1] + 2 * pw), acc)
    for i, j in itertools.product(range(kh), range(kw)):
        r, q = i * dh, j * dw
        buf[..., r : r + (bh - 1) * sh + 1 : sh, q : q + (bw - 1) * sw + 1 : sw] += cols[
            ..., i, j, :, :
        ]
    y = buf[..., ph : ph + output_size[0], pw : pw + output_size[1]]
    return np.ascontiguousarray(y).astype(x.dtype, copy=False)


register(
    OpDef(
        name="col2im",
        conformance=grid(
            # x [N, C*KH*KW, L]: L is the number of blocks that fit the padded output
            point("basic", shapes=((1, 8, 9),), output_size=(4, 4), kernel=(2, 2)),
            point("stride", shapes=((2, 12, 6),), output_size=(5, 6), kernel=(2, 3),
                  stride=(2, 2), padding=(1, 1), dilation=(1, 2)),
        ),  # fmt: skip
        inputs=("x",),
        attrs=(
            Attr("output_size", "ints", doc="(H, W)"),
            Attr("kernel", "ints", doc="(KH, KW)"),
            Attr("dilation", "ints", (1, 1)),
            Attr("padding", "ints", (0, 0), "(ph, pw) on both sides"),
            Attr("stride", "ints", (1, 1)),
        ),
        infer=_col2im_infer,
        reference=_col2im,
        doc=(
            "y[.., c, p, q] = sum over blocks (u, v) and taps (i, j) with p = u*sh - ph + i*dh, "
            "q = v*sw - pw + j*dw of x[.., (c*KH + i)*KW + j, u*BW + v] (torch.nn.functional."
            "fold); BH = (H + 2 ph - dh (KH-1) - 1) // sh + 1, likewise BW; sums in f32."
        ),
        category="conv",
        dtypes=FLOATS,
    )
)
