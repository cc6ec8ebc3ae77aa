"""Cases for the ``reduce``, ``reduce_var`` and ``reduce_arg`` families: the op's declared axis
grid over several shapes (size-1 dims, odd sizes), edge values, and one NaN per row -- a
reduction that skips NaN instead of propagating it fails. Points that give their own shapes
(rank 0, rank 5, empty axes, low-variance rows, ties) are used as they stand."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators.points import accumulation_length, point_case, select
from cuvil_ref.ops import OpDef

SHAPES = {
    "reduce": [(2, 3, 4), (1, 5, 1), (3, 7, 2)],
    "reduce_var": [(3, 8, 2)],
    "reduce_arg": [(3, 5), (2, 3, 4)],
}


def _dtypes(opdef: OpDef, quick: bool) -> list[str]:
    allowed = {d.value for d in opdef.dtypes}
    if quick:
        return ["f32"]
    return [d for d in ("f32", "f16", "i32") if d in allowed]


def reduce_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    op, points = opdef.name, select(opdef, quick)
    shapes = SHAPES[opdef.family]
    domain = opdef.conformance.domain
    axis_key = "axis" if opdef.family == "reduce_arg" else "axes"
    for dtype in _dtypes(opdef, quick):
        kind = domain if domain != "any" and dtype != "i32" else "normal"
        for p in points:
            if p.shapes:
                continue
            for shape in shapes[:1] if quick else shapes:
                axes = p.attrs.get(axis_key)
                if axes is not None and max(-a - 1 if a < 0 else a for a in _tuple(axes)) >= len(
                    shape
                ):
                    continue
                k = accumulation_length(opdef, [shape], p.attrs)
                yield make_case(
                    op, [InputSpec(shape, dtype, kind)], p.attrs, rule=p.rule, reduce_len=k
                )
        edge_attrs = {axis_key: (1,) if axis_key == "axes" else 1}
        yield make_case(
            op,
            [InputSpec((4, 6), dtype, "edge", extra=opdef.conformance.edges)],
            edge_attrs,
            label="edge",
            rule="edge",
            reduce_len=6,
        )
        if dtype != "i32" and "nan_one_operand" not in opdef.conformance.rules():
            yield make_case(
                op,
                [InputSpec((4, 6), dtype, "nan_one:6")],
                edge_attrs,
                label="nan_one",
                rule="nan_one_operand",
                reduce_len=6,
            )
    for p in points:
        if p.shapes:
            yield point_case(opdef, p)


def _tuple(axes: object) -> tuple[int, ...]:
    return tuple(axes) if isinstance(axes, tuple) else (int(axes),)  # type: ignore[call-overload]
