"""Cases for normalization, matmul/linear, conv2d and pooling: attribute grids (stride, padding,
dilation, groups incl. depthwise, ceil_mode, count_include_pad) on odd sizes."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case


def layer_norm_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((2, 3, 8), (8,), True),
        ((4, 5), (5,), False),
        ((2, 3, 4), (3, 4), True),
        ((1, 7, 16), (16,), True),
    ]
    for shape, norm, affine in grid[:1] if quick else grid:
        ins = [InputSpec(shape)]
        if affine:
            ins += [InputSpec(norm, const=True), InputSpec(norm, const=True)]
        n = 1
        for d in norm:
            n *= d
        yield make_case(op, ins, {"normalized_shape": norm, "eps": 1e-5}, reduce_len=n)
    if op == "rms_norm":
        return


def rms_norm_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, norm in [((2, 3, 8), (8,)), ((4, 6), (6,))][: 1 if quick else 2]:
        yield make_case(
            op,
            [InputSpec(shape), InputSpec(norm, const=True)],
            {"normalized_shape": norm, "eps": 1e-6},
            reduce_len=norm[-1],
        )


def batch_norm_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape in [(2, 4, 3, 3), (3, 5), (1, 3, 7)][: 1 if quick else 3]:
        c = shape[1]
        ins = [
            InputSpec(shape),
            InputSpec((c,), const=True),
            InputSpec((c,), kind="positive", const=True),
            InputSpec((c,), const=True),
            InputSpec((c,), const=True),
        ]
        yield make_case(op, ins, {"eps": 1e-5})


def group_norm_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, groups in [((2, 6, 3, 3), 3), ((1, 4, 5), 2), ((2, 6, 2, 2), 6)][
        : 1 if quick else 3
    ]:
        c = shape[1]
        n = c // groups
        for d in shape[2:]:
            n *= d
        yield make_case(
            op,
            [InputSpec(shape), InputSpec((c,), const=True), InputSpec((c,), const=True)],
            {"num_groups": groups},
            reduce_len=n,
        )


def matmul_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((4,), (4,)),
        ((4,), (4, 3)),
        ((3, 4), (4,)),
        ((2, 1, 3, 4), (3, 4, 2)),
        ((17, 33), (33, 9)),
        ((1, 1), (1, 1)),
        ((0, 4), (4, 3)),
    ]
    for sa, sb in grid[:2] if quick else grid:
        yield make_case(op, [InputSpec(sa), InputSpec(sb)], reduce_len=sa[-1])
    if not quick:
        yield make_case(op, [InputSpec((5, 6), "f16"), InputSpec((6, 3), "f16")], reduce_len=6)
        yield make_case(
            op, [InputSpec((4, 5), "f32", "edge"), InputSpec((5, 3))], label="edge", reduce_len=5
        )


def linear_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((2, 8), 5, True), ((3, 4, 7), 6, True), ((1, 33), 17, False), ((5,), 3, True)]
    for shape, out, bias in grid[:1] if quick else grid:
        ins = [InputSpec(shape), InputSpec((out, shape[-1]), const=True)]
        if bias:
            ins.append(InputSpec((out,), const=True))
        yield make_case(op, ins, reduce_len=shape[-1])


CONV_GRID = [
    # (N, C, H, W), (O, kh, kw), stride, padding(t,l,b,r), dilation, groups
    ((1, 3, 8, 8), (4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 9, 7), (6, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 3, 11, 11), (5, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    ((1, 6, 7, 7), (6, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    ((1, 8, 6, 6), (4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
    ((1, 4, 9, 9), (4, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 2),  # dilation + groups
    ((1, 3, 5, 8), (2, 2, 3), (1, 2), (0, 1, 1, 0), (1, 1), 1),  # asymmetric
    ((1, 12, 5, 5), (12, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 12),  # depthwise stride 2
]


def conv_cases(op: str, quick: bool) -> Iterator[Case]:
    for xs, (o, kh, kw), stride, pad, dil, groups in CONV_GRID[:2] if quick else CONV_GRID:
        c = xs[1]
        ins = [
            InputSpec(xs),
            InputSpec((o, c // groups, kh, kw), const=True),
            InputSpec((o,), const=True),
        ]
        attrs = {"stride": stride, "padding": pad, "dilation": dil, "groups": groups}
        yield make_case(op, ins, attrs, reduce_len=c // groups * kh * kw)
    if not quick:
        yield make_case(
            op,
            [InputSpec((1, 2, 5, 5), "f32", "edge"), InputSpec((3, 2, 3, 3), const=True)],
            {"padding": (1, 1, 1, 1)},
            label="edge",
            reduce_len=18,
        )
        yield make_case(
            op,
            [InputSpec((1, 4, 6, 6), "f16"), InputSpec((4, 4, 3, 3), "f16", const=True)],
            reduce_len=36,
        )


def max_pool_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 8, 8), {"kernel": (2, 2)}),
        ((2, 2, 9, 9), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        ((1, 2, 7, 8), {"kernel": (3, 2), "stride": (2, 1), "ceil_mode": True}),
        ((1, 1, 9, 9), {"kernel": (3, 3), "stride": (1, 1), "dilation": (2, 2)}),
        ((1, 3, 6, 6), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "ceil_mode": True}),
    ]
    for shape, attrs in grid[:1] if quick else grid:
        yield make_case(op, [InputSpec(shape)], attrs)
    if not quick:
        yield make_case(
            op, [InputSpec((1, 2, 6, 6), "f32", "edge")], {"kernel": (2, 2)}, label="edge"
        )


def avg_pool_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 8, 8), {"kernel": (2, 2)}),
        ((1, 2, 9, 9), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        (
            (1, 2, 9, 9),
            {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "count_include_pad": False},
        ),
        ((1, 2, 7, 8), {"kernel": (3, 2), "stride": (2, 1), "ceil_mode": True}),
        (
            (1, 2, 7, 7),
            {
                "kernel": (3, 3),
                "stride": (2, 2),
                "padding": (1, 1),
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),
        ((1, 1, 6, 6), {"kernel": (2, 2), "divisor_override": 3}),
    ]
    for shape, attrs in grid[:1] if quick else grid:
        k = attrs["kernel"]
        yield make_case(op, [InputSpec(shape)], attrs, reduce_len=k[0] * k[1])


def adaptive_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 7, 7), (1, 1)),
        ((2, 2, 10, 7), (3, 4)),
        ((1, 2, 5, 5), (5, 5)),
        ((1, 1, 4, 9), (2, 3)),
    ]
    for shape, out in grid[:1] if quick else grid:
        yield make_case(
            op, [InputSpec(shape)], {"output_size": out}, reduce_len=shape[2] * shape[3]
        )
