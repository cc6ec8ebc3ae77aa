"""Cases for reductions and softmax-like ops: axis grids, keepdim, size-1 and zero-size dims."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cuvil_conformance.cases import Case, InputSpec, make_case

AXES_GRID = [None, (0,), (-1,), (0, 2), (1,)]


def _len(shape: tuple[int, ...], axes: tuple[int, ...] | None) -> int:
    if axes is None:
        return int(np.prod(shape)) if shape else 1
    return int(np.prod([shape[a] for a in axes])) if shape else 1


def reduce_cases(op: str, quick: bool) -> Iterator[Case]:
    shapes = [(2, 3, 4)] if quick else [(2, 3, 4), (1, 5, 1), (3, 7, 2)]
    dtypes = ["f32"] if quick else ["f32", "f16"]
    if op in ("sum", "amax", "amin", "prod") and not quick:
        dtypes.append("i32")
    kind = "unit" if op == "prod" else "normal"
    for dtype in dtypes:
        for shape in shapes:
            for axes in AXES_GRID[:2] if quick else AXES_GRID:
                for keepdim in (False, True):
                    attrs: dict[str, object] = {"axes": axes, "keepdim": keepdim}
                    yield make_case(
                        op, [InputSpec(shape, dtype, kind)], attrs, reduce_len=_len(shape, axes)
                    )
        if not quick:
            yield make_case(
                op, [InputSpec((4, 6), dtype, "edge")], {"axes": (1,)}, label="edge", reduce_len=6
            )
    if not quick and op in ("sum", "mean", "prod"):
        yield make_case(op, [InputSpec((2, 0, 3))], {"axes": (1,)}, label="empty")
    if not quick:
        yield make_case(op, [InputSpec(())], {"axes": None}, label="rank0")
        yield make_case(op, [InputSpec((2, 3, 2, 2, 3))], {"axes": (1, 3)}, reduce_len=6)


def var_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, axes in [((3, 8), (1,)), ((2, 3, 4), None), ((5, 4), (0,))]:
        for correction in (0, 1):
            yield make_case(
                op,
                [InputSpec(shape)],
                {"axes": axes, "correction": correction},
                reduce_len=_len(shape, axes),
            )
            if quick:
                return


def arg_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape in [(3, 5), (2, 3, 4)]:
        for axis in (None, 0, -1):
            for keepdim in (False, True):
                yield make_case(op, [InputSpec(shape)], {"axis": axis, "keepdim": keepdim})
        if quick:
            return
    yield make_case(op, [InputSpec((4, 6), "f32", "edge")], {"axis": 1}, label="edge")
    yield make_case(op, [InputSpec((3, 4), "i32", "small")], {"axis": 1}, label="ties")


def softmax_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, axis in [((2, 5), -1), ((3, 4, 6), 1), ((2, 3, 4), 0), ((7,), 0), ((1, 1, 9), -1)]:
        yield make_case(op, [InputSpec(shape)], {"axis": axis}, reduce_len=shape[axis])
        if quick:
            return
    yield make_case(
        op, [InputSpec((4, 6), "f32", "edge")], {"axis": -1}, label="edge", reduce_len=6
    )
    yield make_case(op, [InputSpec((3, 8), "f16")], {"axis": -1}, reduce_len=8)


def topk_cases(op: str, quick: bool) -> Iterator[Case]:
    for shape, k, axis in [((3, 10), 3, -1), ((2, 5, 4), 2, 1), ((6,), 6, 0), ((4, 7), 1, 0)]:
        yield make_case(op, [InputSpec(shape)], {"k": k, "axis": axis})
        if quick:
            return
    yield make_case(op, [InputSpec((3, 8), "i32", "small")], {"k": 4}, label="ties")
    yield make_case(op, [InputSpec((4, 6), "f32", "edge")], {"k": 3}, label="edge")
