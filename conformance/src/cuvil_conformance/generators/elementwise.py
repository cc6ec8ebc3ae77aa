"""Cases for the ``unary`` and ``binary`` families: shapes of rank 0 to 5, broadcasting,
zero-size tensors, every accepted dtype, and edge values (±0, NaN, ±Inf, subnormals, int limits,
plus the op's own ``edges``). Binary ops also get inputs where **exactly one operand is NaN** at
each position (in both orders), which separates "NaN propagates" from "the other operand wins".
The attribute grid and extra points come from the op's declaration."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators.points import DTYPE_ORDER, point_case, select
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import OpDef
from cuvil_ref.ops.grid import GridPoint

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
EDGE_SHAPE = (5, 8)


def dtypes_of(opdef: OpDef, quick: bool) -> list[str]:
    allowed = {d.value for d in opdef.dtypes}
    chosen = [d for d in DTYPE_ORDER if d in allowed]
    # quick: one dtype; full: f32, f16, bf16 and one int type (u8/i64 add little)
    return chosen[:1] if quick else chosen[:4]


def _kind(opdef: OpDef, dtype: str) -> str:
    domain = opdef.conformance.domain
    return domain if domain != "any" and DType(dtype).is_float else "normal"


def unary_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    op, points = opdef.name, select(opdef, quick)
    attr_points = [p for p in points if not p.shapes] or [GridPoint()]
    edges = opdef.conformance.edges
    for dtype in dtypes_of(opdef, quick):
        for i, p in enumerate(attr_points):
            # every shape once for the first point; the other points on a few
            shapes = UNARY_SHAPES if i == 0 and not quick else UNARY_SHAPES[2:5]
            if quick:
                shapes = UNARY_SHAPES[:3] if i == 0 else UNARY_SHAPES[3:4]
            label = "" if p.rule == "basic" else p.rule
            for shape in shapes:
                spec = InputSpec(shape, dtype, _kind(opdef, dtype))
                yield make_case(op, [spec], p.attrs, label=label, rule=p.rule, tags=["shape"])
            kind = "bool" if dtype == "bool" else "edge"
            yield make_case(
                op,
                [InputSpec(EDGE_SHAPE, dtype, kind, extra=edges)],
                p.attrs,
                label="edge",
                rule="edge",
            )
    for p in points:
        if p.shapes:
            yield point_case(opdef, p)


def binary_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    op, points = opdef.name, select(opdef, quick)
    for dtype in dtypes_of(opdef, quick):
        kind_b = _kind(opdef, dtype)
        for sa, sb in BINARY_SHAPES[:3] if quick else BINARY_SHAPES:
            specs = [InputSpec(sa, dtype), InputSpec(sb, dtype, kind_b)]
            yield make_case(op, specs, tags=["broadcast"], rule="broadcast")
        edge = [InputSpec(EDGE_SHAPE, dtype, "edge"), InputSpec(EDGE_SHAPE, dtype, "edge")]
        yield make_case(op, edge, label="edge", rule="edge")
        if DType(dtype).is_float:
            # NaN in a where b is a number, and the reverse; a third of the positions both finite
            nan = [InputSpec((6, 7), dtype, "nan_one:3:0"), InputSpec((6, 7), dtype, "nan_one:3:1")]
            yield make_case(op, nan, label="nan_one", rule="nan_one_operand")
            swapped = [InputSpec((7,), dtype, "edge"), InputSpec((6, 7), dtype, "nan_one:2:1")]
            yield make_case(op, swapped, label="nan_one_broadcast", rule="nan_one_operand")
        if dtype in ("i8", "u8") and not quick:  # wrap-around at the limits, as torch
            full = [InputSpec((6, 6), dtype, "full"), InputSpec((6, 6), dtype, "full")]
            yield make_case(op, full, label="limits", rule="edge")
    for p in points:
        if p.shapes:
            yield point_case(opdef, p)


def division_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    """The ``divide`` family (floor/trunc division, fmod, remainder): the binary cases, except
    that integer divisors are never 0 (an error, as in PyTorch); float divisors include ±0, ±Inf
    and NaN in the edge cases; integer limits (i8: ``-128 // -1`` wraps)."""
    op = opdef.name
    for dtype in dtypes_of(opdef, quick):
        is_float = DType(dtype).is_float
        divisor = _kind(opdef, dtype) if is_float else "nonzero"
        for sa, sb in BINARY_SHAPES[:3] if quick else BINARY_SHAPES:
            specs = [InputSpec(sa, dtype), InputSpec(sb, dtype, divisor)]
            yield make_case(op, specs, tags=["broadcast"], rule="broadcast")
        if is_float:
            edge = [InputSpec(EDGE_SHAPE, dtype, "edge"), InputSpec(EDGE_SHAPE, dtype, "edge")]
            yield make_case(op, edge, label="edge", rule="edge")
            nan = [InputSpec((6, 7), dtype, "nan_one:3:0"), InputSpec((6, 7), dtype, "nan_one:3:1")]
            yield make_case(op, nan, label="nan_one", rule="nan_one_operand")
        else:
            limits = [InputSpec((6, 6), dtype, "full"), InputSpec((6, 6), dtype, "nonzero")]
            yield make_case(op, limits, label="limits", rule="edge")
    for p in select(opdef, quick):
        if p.shapes:
            yield point_case(opdef, p)
