"""Cases for elementwise and activation ops: shapes of rank 0 to 5, broadcasting, zero-size
tensors, every accepted dtype, and edge values (±0, NaN, ±Inf, subnormals, int limits)."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import get_op

UNARY_SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 5), (1, 2, 3, 2, 3), (0, 3)]
BINARY_SHAPES = [
    ((3, 5), (3, 5)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 3, 4), (4,)),
    ((2, 1, 3, 1, 2), (1, 4, 1, 5, 2)),
    ((0, 3), (1, 3)),
    ((17,), (17,)),
]
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}
ATTR_GRID: dict[str, list[dict[str, object]]] = {
    "clamp": [{"min": -1.0, "max": 2.0}, {"min": 0.0, "max": None}, {"min": None, "max": 1.0}],
    "hardtanh": [{}, {"min_val": -2.0, "max_val": 3.0}],
    "leaky_relu": [{}, {"negative_slope": 0.2}],
    "gelu": [{"approximate": "none"}, {"approximate": "tanh"}],
    "softplus": [{}, {"beta": 2.0, "threshold": 5.0}],
    "elu": [{}, {"alpha": 0.5}],
    "cast": [{"dtype": d} for d in ("f32", "f16", "i32", "i8", "bool")],
    "round": [{"decimals": 0}, {"decimals": 2}, {"decimals": -1}],
}
DTYPE_ORDER = ["f32", "f16", "bf16", "i32", "i8", "u8", "i64", "bool"]


def _dtypes(op: str, quick: bool) -> list[str]:
    allowed = {d.value for d in get_op(op).dtypes}
    chosen = [d for d in DTYPE_ORDER if d in allowed]
    if quick:
        return chosen[:1]
    # bf16 and u8/i64 once each is enough; keep f32, f16 and one int type fully
    return chosen[:4]


def unary_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = ATTR_GRID.get(op, [{}])
    for dtype in _dtypes(op, quick):
        is_float = DType(dtype).is_float
        shapes = UNARY_SHAPES[:3] if quick else UNARY_SHAPES
        for attrs in grid:
            for shape in shapes:
                kind = "normal"
                if op in POSITIVE_ONLY and is_float:
                    kind = "positive"
                yield make_case(op, [InputSpec(shape, dtype, kind)], attrs, tags=["shape"])
            # edge values: NaN, infinities, signed zeros, subnormals, int limits
            edge_kind = "edge" if dtype != "bool" else "bool"
            yield make_case(
                op, [InputSpec((4, 6), dtype, edge_kind)], attrs, label="edge", tags=["edge"]
            )


def binary_cases(op: str, quick: bool) -> Iterator[Case]:
    for dtype in _dtypes(op, quick):
        pairs = BINARY_SHAPES[:3] if quick else BINARY_SHAPES
        kind_b = "positive" if op in ("pow",) else "normal"
        for sa, sb in pairs:
            yield make_case(
                op, [InputSpec(sa, dtype), InputSpec(sb, dtype, kind_b)], tags=["broadcast"]
            )
        yield make_case(
            op,
            [InputSpec((4, 5), dtype, "edge"), InputSpec((4, 5), dtype, "edge")],
            label="edge",
            tags=["edge"],
        )
        if dtype in ("i8", "u8") and not quick:  # wrap-around at the limits, as torch
            yield make_case(
                op,
                [InputSpec((6, 6), dtype, "full"), InputSpec((6, 6), dtype, "full")],
                label="limits",
                tags=["edge"],
            )
    if not quick and op in ("add", "mul", "maximum"):  # mixed dtypes: PyTorch promotion
        yield make_case(op, [InputSpec((3, 4), "f32"), InputSpec((3, 4), "f16")], label="promote")
        yield make_case(op, [InputSpec((3, 4), "i32"), InputSpec((4,), "f32")], label="promote")


def where_cases(op: str, quick: bool) -> Iterator[Case]:
    yield make_case(op, [InputSpec((3, 4), "bool"), InputSpec((3, 4)), InputSpec((3, 4))])
    if quick:
        return
    yield make_case(op, [InputSpec((3, 1), "bool"), InputSpec((1, 4)), InputSpec(())])
    yield make_case(
        op, [InputSpec((2, 3), "bool"), InputSpec((2, 3), "i32"), InputSpec((2, 3), "i32")]
    )
    yield make_case(
        op,
        [
            InputSpec((4, 5), "bool"),
            InputSpec((4, 5), "f32", "edge"),
            InputSpec((4, 5), "f32", "edge"),
        ],
        label="edge",
    )


def division_cases(op: str, quick: bool) -> Iterator[Case]:
    """floor/trunc division and the remainders: integer divisors are never 0 (an error, as in
    PyTorch); float divisors include ±0 and ±Inf in the edge case."""
    for dtype in ["f32", "i32", "i8", "u8", "i64"][: 1 if quick else 5]:
        is_float = DType(dtype).is_float
        divisor = "normal" if is_float else "nonzero"
        for sa, sb in BINARY_SHAPES[:3] if quick else BINARY_SHAPES:
            yield make_case(op, [InputSpec(sa, dtype), InputSpec(sb, dtype, divisor)])
        if is_float:
            yield make_case(
                op,
                [InputSpec((4, 5), dtype, "edge"), InputSpec((4, 5), dtype, "edge")],
                label="edge",
                tags=["edge"],
            )
        elif not quick:  # the dtype's limits (i8: -128 // -1 wraps)
            yield make_case(
                op,
                [InputSpec((6, 6), dtype, "full"), InputSpec((6, 6), dtype, "nonzero")],
                label="limits",
                tags=["edge"],
            )
