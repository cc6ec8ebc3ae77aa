"""Cases for the quantized ops of docs/semantics.md: int8 limits, saturation, zero points at the
ends of the range, per-channel rescale, ties in quantize, fused relu/relu6 clamp bounds.

Attributes are derived from realistic float scales with ``cuvil_ref.ops.qarith`` exactly as the
quantization pass derives them, so the cases exercise the multipliers packs will really see.
"""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators import register_generator
from cuvil_ref.ops.qarith import (
    quantize_multiplier,
    quantize_multipliers,
    shared_shift_multipliers,
)


def _rq(ratios: list[float]) -> dict[str, tuple[int, ...]]:
    m, s = quantize_multipliers(ratios)
    return {"multiplier": tuple(int(x) for x in m), "shift": tuple(int(x) for x in s)}


def _one(ratio: float) -> dict[str, tuple[int, ...]]:
    m, s = quantize_multiplier(ratio)
    return {"multiplier": (m,), "shift": (s,)}


# (x_zp, out_scale, out_zp, qmin, qmax): plain, relu (qmin = out_zp), saturating, extreme zps
EPILOGUES = [
    (3, 0.05, -5, -128, 127),
    (-128, 0.02, -128, -128, 127),
    (0, 0.002, 10, 10, 127),  # relu bound, tiny out scale -> saturates
    (127, 0.5, 127, -128, 127),
    (-7, 0.04, -20, -20, 80),  # relu6-like upper bound
]


def quantize_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1.0,), (0,), None, "edge"),
        ((0.05,), (-3,), None, "normal"),
        ((0.5,), (10,), None, "edge"),
        ((1e-3,), (0,), None, "normal"),
        ((0.1, 0.2, 0.05), (0, 0, 0), 1, "normal"),
    ]
    for scale, zp, axis, kind in grid[:2] if quick else grid:
        shape = (2, 3, 4) if axis is not None else (4, 6)
        yield make_case(
            op,
            [InputSpec(shape, "f32", kind)],
            {"scale": scale, "zero_point": zp, "axis": axis},
            tags=["edge"],
        )
    if not quick:
        yield make_case(
            op, [InputSpec((5, 5), "f16", "edge")], {"scale": (0.25,), "zero_point": (1,)}
        )


def dequantize_cases(op: str, quick: bool) -> Iterator[Case]:
    yield make_case(op, [InputSpec((4, 6), "i8", "edge")], {"scale": (0.05,), "zero_point": (-3,)})
    if quick:
        return
    yield make_case(
        op,
        [InputSpec((3, 2, 2), "i8", "full")],
        {"scale": (0.1, 0.2, 0.3), "zero_point": (0, 0, 0), "axis": 0},
    )
    yield make_case(op, [InputSpec((8,), "i32", "normal")], {"scale": (1e-4,), "zero_point": (0,)})


def requantize_cases(op: str, quick: bool) -> Iterator[Case]:
    for x_zp, out_scale, out_zp, qmin, qmax in EPILOGUES[:2] if quick else EPILOGUES:
        attrs = {
            "x_zp": x_zp,
            **_one(0.03 / out_scale),
            "out_scale": out_scale,
            "out_zp": out_zp,
            "qmin": qmin,
            "qmax": qmax,
        }
        yield make_case(op, [InputSpec((4, 8), "i8", "edge")], attrs)


def qlinear_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((2, 16), 5), ((3, 33), 7), ((1, 64), 32)]
    for i, ((shape, out), epi) in enumerate(zip(grid * 2, EPILOGUES)):
        if quick and i > 1:
            return
        x_zp, out_scale, out_zp, qmin, qmax = epi
        w_scales = [0.01 + 0.003 * c for c in range(out)]
        attrs = {
            "x_zp": x_zp,
            **_rq([0.02 * s / out_scale for s in w_scales]),
            "out_scale": out_scale,
            "out_zp": out_zp,
            "qmin": qmin,
            "qmax": qmax,
        }
        yield make_case(
            op,
            [
                InputSpec(shape, "i8", "full"),
                InputSpec((out, shape[-1]), "i8", "full", const=True),
                InputSpec((out,), "i32", "normal", const=True),
            ],
            attrs,
        )


QCONV_GRID = [
    ((1, 3, 8, 8), (4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((1, 4, 9, 7), (6, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 6, 7, 7), (6, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    ((1, 3, 11, 11), (4, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    ((1, 8, 5, 5), (5, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 9, 9), (4, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 2),
]


def qconv_cases(op: str, quick: bool) -> Iterator[Case]:
    for i, (xs, (o, kh, kw), stride, pad, dil, groups) in enumerate(QCONV_GRID):
        if quick and i > 1:
            return
        x_zp, out_scale, out_zp, qmin, qmax = EPILOGUES[i % len(EPILOGUES)]
        w_scales = [0.004 + 0.001 * c for c in range(o)]
        attrs = {
            "stride": stride,
            "padding": pad,
            "dilation": dil,
            "groups": groups,
            "x_zp": x_zp,
            **_rq([0.05 * s / out_scale for s in w_scales]),
            "out_scale": out_scale,
            "out_zp": out_zp,
            "qmin": qmin,
            "qmax": qmax,
        }
        yield make_case(
            op,
            [
                InputSpec(xs, "i8", "full"),
                InputSpec((o, xs[1] // groups, kh, kw), "i8", "full", const=True),
                InputSpec((o,), "i32", "normal", const=True),
            ],
            attrs,
        )


def qbinary_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((4, 8), (4, 8), 0.05, 3, 0.04, -2, 0.08, 1),
        ((2, 3, 4), (4,), 0.5, -128, 0.01, 127, 0.02, 0),
        ((3, 1), (1, 5), 0.1, 0, 0.1, 0, 0.1, 0),
        ((6, 6), (6, 6), 0.02, 10, 0.03, -10, 1e-3, 5),
    ]
    for sa, sb, s_a, za, s_b, zb, s_o, zo in grid[:1] if quick else grid:
        if op == "qadd":
            ms, sh = shared_shift_multipliers([s_a / s_o, s_b / s_o])
            rq = {"multiplier": tuple(int(m) for m in ms), "shift": (int(sh),)}
        else:
            rq = _one(s_a * s_b / s_o)
        attrs = {"a_zp": za, "b_zp": zb, **rq, "out_scale": s_o, "out_zp": zo}
        yield make_case(op, [InputSpec(sa, "i8", "full"), InputSpec(sb, "i8", "full")], attrs)


def qmatmul_cases(op: str, quick: bool) -> Iterator[Case]:
    for sa, sb in [((3, 16), (16, 5)), ((2, 4, 9), (2, 9, 3))][: 1 if quick else 2]:
        attrs = {"a_zp": -3, "b_zp": 5, **_one(0.02 * 0.03 / 0.3), "out_scale": 0.3, "out_zp": 2}
        yield make_case(op, [InputSpec(sa, "i8", "full"), InputSpec(sb, "i8", "full")], attrs)


def qconcat_cases(op: str, quick: bool) -> Iterator[Case]:
    scales, zps, s_out = [0.05, 0.1, 0.05], [0, -4, 3], 0.08
    attrs = {
        "axis": 1,
        "x_zp": tuple(zps),
        **_rq([s / s_out for s in scales]),
        "out_scale": s_out,
        "out_zp": 1,
    }
    yield make_case(
        op,
        [
            InputSpec((2, 3), "i8", "full"),
            InputSpec((2, 1), "i8", "full"),
            InputSpec((2, 4), "i8", "full"),
        ],
        attrs,
    )
    if not quick:  # identical params: identity requantization
        attrs = {"axis": 0, "x_zp": (2, 2), **_rq([1.0, 1.0]), "out_scale": 0.1, "out_zp": 2}
        yield make_case(
            op, [InputSpec((1, 5), "i8", "full"), InputSpec((2, 5), "i8", "full")], attrs
        )


def qmax_pool_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 8, 8), {"kernel": (2, 2), "stride": (2, 2)}),
        ((1, 2, 9, 9), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1)}),
        ((1, 2, 7, 8), {"kernel": (3, 2), "stride": (2, 1), "ceil_mode": True}),
    ]
    for shape, attrs in grid[:1] if quick else grid:
        yield make_case(op, [InputSpec(shape, "i8", "full")], attrs)


def _pool_table(s_in: float, s_out: float, n: int) -> dict[str, tuple[int, ...]]:
    return _rq([s_in / (s_out * k) for k in range(1, n + 1)])


def qavg_pool_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((1, 3, 8, 8), {"kernel": (2, 2), "stride": (2, 2)}),
        (
            (1, 2, 9, 9),
            {
                "kernel": (3, 3),
                "stride": (2, 2),
                "padding": (1, 1, 1, 1),
                "count_include_pad": False,
            },
        ),
        (
            (1, 2, 7, 7),
            {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1), "ceil_mode": True},
        ),
    ]
    for shape, attrs in grid[:1] if quick else grid:
        k = attrs["kernel"][0] * attrs["kernel"][1]
        full = {**attrs, "x_zp": -5, **_pool_table(0.05, 0.04, k), "out_scale": 0.04, "out_zp": 3}
        yield make_case(op, [InputSpec(shape, "i8", "full")], full)


def qadaptive_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, out in [((1, 4, 7, 7), (1, 1)), ((1, 2, 10, 7), (3, 4))][: 1 if quick else 2]:
        attrs = {
            "output_size": out,
            "x_zp": 2,
            **_pool_table(0.05, 0.05, shape[2] * shape[3]),
            "out_scale": 0.05,
            "out_zp": 2,
        }
        yield make_case(op, [InputSpec(shape, "i8", "full")], attrs)


for _op, _gen in {
    "quantize": quantize_cases,
    "dequantize": dequantize_cases,
    "requantize": requantize_cases,
    "qlinear": qlinear_cases,
    "qconv2d": qconv_cases,
    "qadd": qbinary_cases,
    "qmul": qbinary_cases,
    "qmatmul": qmatmul_cases,
    "qconcat": qconcat_cases,
    "qmax_pool2d": qmax_pool_cases,
    "qavg_pool2d": qavg_pool_cases,
    "qadaptive_avg_pool2d": qadaptive_cases,
}.items():
    register_generator(_op, _gen)
