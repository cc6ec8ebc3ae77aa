"""Cases for the ops added to cover Core ATen's neural-network and indexing families: 3-d and
transposed convolution, 3-d pools and max pooling with indices, bilinear upsampling, grid
sampling, advanced indexing and the scatter family. Each grid names the semantic rule its
points exercise (strides, padding, groups, ceil_mode, ties, repeated targets...)."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators import register_generator


def _grid(points: list, quick: bool) -> list:
    return points[:1] if quick else points


def conv3d_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        # x, (O, kd, kh, kw), stride, padding (lo..., hi...), dilation, groups
        ((1, 2, 5, 5, 5), (3, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1), 1),
        ((2, 4, 6, 5, 7), (4, 2, 3, 2), (2, 1, 2), (0, 1, 0, 1, 0, 1), (1, 2, 1), 2),
        ((1, 3, 4, 4, 4), (3, 1, 1, 1), (1, 1, 1), (0,) * 6, (1, 1, 1), 3),  # depthwise 1x1x1
    ]
    for xs, (o, *k), stride, pad, dil, groups in _grid(grid, quick):
        c = xs[1]
        ins = [
            InputSpec(xs),
            InputSpec((o, c // groups, *k), const=True),
            InputSpec((o,), const=True),
        ]
        attrs = {"stride": stride, "padding": pad, "dilation": dil, "groups": groups}
        yield make_case(op, ins, attrs, reduce_len=c // groups * k[0] * k[1] * k[2])


def conv_transpose_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        # x, (C, O/g, *k), stride, padding, output_padding, dilation, groups
        ((1, 4, 5, 5), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
        ((2, 4, 7), (4, 2, 3), (2,), (0,), (1,), (1,), 2),
        ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), (0, 1, 0), (0, 1, 0), (2, 1, 1), 1),
    ]
    for xs, ws, stride, pad, opad, dil, groups in _grid(grid, quick):
        ins = [InputSpec(xs), InputSpec(ws, const=True), InputSpec((ws[1] * groups,), const=True)]
        attrs = {
            "stride": stride,
            "padding": pad,
            "output_padding": opad,
            "dilation": dil,
            "groups": groups,
        }
        taps = 1
        for k in ws[2:]:
            taps *= k
        yield make_case(op, ins, attrs, reduce_len=xs[1] // groups * taps)


def pool3d_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 2, 5, 6, 7), {"kernel": (2, 2, 2)}),
        ((2, 1, 6, 5, 5), {"kernel": (3, 2, 3), "stride": (2, 1, 2), "padding": (1, 1, 1)}),
        ((1, 2, 5, 5, 4), {"kernel": (2, 3, 2), "stride": (2, 2, 2), "ceil_mode": True}),
    ]
    for shape, attrs in _grid(grid, quick):
        yield make_case(op, [InputSpec(shape)], attrs, reduce_len=12)
    if not quick:
        yield make_case(
            op,
            [InputSpec((1, 2, 4, 4, 4), "f32", "edge")],
            {"kernel": (2, 2, 2)},
            label="edge",
            reduce_len=8,
        )
        if op == "avg_pool3d":
            yield make_case(
                op,
                [InputSpec((1, 1, 4, 4, 4), "i64")],
                {"kernel": (2, 2, 2), "divisor_override": 3},
                label="int",
            )


def max_pool_with_indices_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 7, 8), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        ((2, 2, 6, 6), {"kernel": (2, 2), "dilation": (2, 1), "ceil_mode": True}),
        ((1, 2, 4, 5, 6), {"kernel": (2, 2, 3), "stride": (1, 2, 2)}),
    ]
    for shape, attrs in _grid(grid, quick):
        yield make_case(op, [InputSpec(shape)], attrs)
    if not quick:  # ties (small ints) and NaN (edge values) decide which index is chosen
        yield make_case(
            op, [InputSpec((1, 2, 6, 6), "i32", "small")], {"kernel": (3, 3)}, label="ties"
        )
        yield make_case(
            op, [InputSpec((1, 2, 6, 6), "f32", "edge")], {"kernel": (2, 2)}, label="edge"
        )


def adaptive3d_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, out in _grid([((1, 2, 5, 7, 6), (2, 3, 4)), ((2, 3, 4, 4, 4), (1, 1, 1))], quick):
        yield make_case(op, [InputSpec(shape)], {"output_size": out}, reduce_len=20)


def upsample_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 2, 4, 5), {"size": (8, 10)}),
        ((2, 3, 7, 6), {"size": (5, 9), "align_corners": True}),
        ((1, 1, 6, 6), {"size": (15, 9), "scale_h": 2.5, "scale_w": 1.5}),
    ]
    for shape, attrs in _grid(grid, quick):
        yield make_case(op, [InputSpec(shape)], attrs, reduce_len=4)


def grid_sample_cases(op: str, quick: bool) -> Iterator[Case]:
    modes = ["bilinear", "nearest", "bicubic"]
    paddings = ["zeros", "border", "reflection"]
    for i, (mode, padding) in enumerate((m, p) for m in modes for p in paddings):
        if quick and i:
            break
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": i % 2 == 1}
        ins = [InputSpec((1, 2, 5, 6)), InputSpec((1, 3, 4, 2), "f32", "unit")]
        yield make_case(op, ins, attrs, reduce_len=16)


def index_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((4, 5, 6), [((3,), 4)], (0,)),
        ((4, 5, 6), [((2, 3), 4), ((3,), 5)], (0, 1)),  # adjacent
        ((4, 5, 6), [((2, 1), 4), ((3,), 6)], (0, 2)),  # separated: broadcast dims first
    ]
    for shape, indices, axes in _grid(grid, quick):
        ins = [InputSpec(shape)] + [InputSpec(s, "i64", f"index:{n}") for s, n in indices]
        yield make_case(op, ins, {"axes": axes})


def index_put_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((4, 5), [InputSpec((6,), "i64", "index:4")], (6, 5), (0,), True),  # repeats add up
        (
            (4, 5),
            [InputSpec((3,), "i64", "index:4"), InputSpec((3,), "i64", "index:5")],
            (3,),
            (0, 1),
            False,
        ),
        ((4, 5), [InputSpec((4, 5), "bool")], (), (0,), False),  # a mask writes a scalar
    ]
    for shape, indices, vshape, axes, acc in _grid(grid, quick):
        ins = [InputSpec(shape), InputSpec(vshape), *indices]
        yield make_case(op, ins, {"axes": axes, "accumulate": acc})


def masked_scatter_cases(op: str, quick: bool) -> Iterator[Case]:
    yield make_case(op, [InputSpec((3, 4)), InputSpec((3, 4), "bool"), InputSpec((12,))])
    if not quick:
        yield make_case(op, [InputSpec((2, 3, 4)), InputSpec((3, 4), "bool"), InputSpec((30,))])


def scatter_cases(op: str, quick: bool) -> Iterator[Case]:
    reductions = ["none", "sum", "prod", "mean", "amax", "amin"]
    for i, reduce in enumerate(reductions):
        if quick and i:
            break
        for include_self in (True, False) if reduce != "none" else (True,):
            ins = [InputSpec((4, 5)), InputSpec((6, 5), "i64", "index:4"), InputSpec((6, 5))]
            attrs = {"axis": 0, "reduce": reduce, "include_self": include_self}
            yield make_case(op, ins, attrs, reduce_len=6)
    if not quick:
        ins = [
            InputSpec((4, 5), "i64"),
            InputSpec((4, 3), "i64", "index:5"),
            InputSpec((4, 3), "i64"),
        ]
        yield make_case(op, ins, {"axis": 1, "reduce": "mean"}, label="int")


def slice_scatter_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((4, 6), (4, 2), {"axis": 1, "start": 1, "end": 5, "step": 2}),
        ((5, 3), (2, 3), {"axis": 0, "start": -2}),
    ]
    for shape, src, attrs in _grid(grid, quick):
        yield make_case(op, [InputSpec(shape), InputSpec(src)], attrs)


def embedding_bag_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        # offsets (sorted, may repeat: empty bags give zeros), attrs, per-sample weights
        ((4,), {"mode": "sum"}, False),
        ((4,), {"mode": "mean", "padding_idx": 2}, False),
        ((4,), {"mode": "max"}, False),
        ((5,), {"mode": "sum", "include_last_offset": True}, True),
    ]
    for offsets, attrs, weighted in _grid(grid, quick):
        ins = [
            InputSpec((7, 3), const=True),
            InputSpec((9,), "i64", "index:7"),
            InputSpec(offsets, "i64", "offsets:9"),
        ]
        if weighted:
            ins.append(InputSpec((9,)))
        yield make_case(op, ins, attrs, reduce_len=9)


def col2im_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        # x [N, C*KH*KW, L], attrs (L: the blocks that fit the padded output)
        ((1, 8, 9), {"output_size": (4, 4), "kernel": (2, 2)}),
        (
            (2, 12, 6),
            {
                "output_size": (5, 6),
                "kernel": (2, 3),
                "stride": (2, 2),
                "padding": (1, 1),
                "dilation": (1, 2),
            },
        ),
    ]
    for shape, attrs in _grid(grid, quick):
        yield make_case(op, [InputSpec(shape)], attrs, reduce_len=6)


for _op, _gen in {
    "conv3d": conv3d_cases,
    "conv_transpose": conv_transpose_cases,
    "max_pool3d": pool3d_cases,
    "avg_pool3d": pool3d_cases,
    "max_pool_with_indices": max_pool_with_indices_cases,
    "adaptive_avg_pool3d": adaptive3d_cases,
    "upsample_bilinear2d": upsample_cases,
    "grid_sample": grid_sample_cases,
    "index": index_cases,
    "index_put": index_put_cases,
    "masked_scatter": masked_scatter_cases,
    "scatter": scatter_cases,
    "slice_scatter": slice_scatter_cases,
    "embedding_bag": embedding_bag_cases,
    "col2im": col2im_cases,
}.items():
    register_generator(_op, _gen)
