"""Cases for shape and data-movement ops: negative axes and indices, steps, zero-size dims,
symbol-free static shapes (symbolic dims are covered by the core's own tests)."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case


def _simple(
    op: str,
    grid: list[tuple[tuple[int, ...], dict]],
    quick: bool,
    dtypes: tuple[str, ...] = ("f32", "i8"),
) -> Iterator[Case]:
    for dtype in dtypes[:1] if quick else dtypes:
        for shape, attrs in grid[:2] if quick else grid:
            yield make_case(op, [InputSpec(shape, dtype)], attrs)


def reshape_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((2, 3, 4), {"shape": (6, 4)}),
            ((2, 3, 4), {"shape": (-1,)}),
            ((2, 3, 4), {"shape": (4, -1, 2)}),
            ((0, 3), {"shape": (3, 0)}),
            ((), {"shape": (1, 1)}),
        ],
        quick,
    )


def flatten_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((2, 3, 4, 5), {"start_dim": 1}),
            ((2, 3, 4), {}),
            ((2, 3, 4, 5), {"start_dim": 1, "end_dim": 2}),
            ((2, 3, 4), {"start_dim": -2, "end_dim": -1}),
        ],
        quick,
    )


def permute_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((2, 3, 4), {"perm": (2, 0, 1)}),
            ((1, 3, 5, 4), {"perm": (0, 2, 3, 1)}),
            ((2, 3, 1, 2, 2), {"perm": (4, 3, 2, 1, 0)}),
        ],
        quick,
    )


def transpose_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((3, 5), {"dim0": 0, "dim1": 1}),
            ((2, 3, 4), {"dim0": -1, "dim1": 0}),
            ((2, 3, 4, 5), {"dim0": 1, "dim1": 2}),
        ],
        quick,
    )


def squeeze_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((1, 3, 1, 4), {}),
            ((1, 3, 1, 4), {"axes": (0,)}),
            ((1, 3, 1, 4), {"axes": (-2,)}),
            ((2, 3), {"axes": (0,)}),
        ],
        quick,
    )


def unsqueeze_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [((3, 4), {"axis": 0}), ((3, 4), {"axis": -1}), ((), {"axis": 0}), ((3, 4), {"axis": 1})],
        quick,
    )


def expand_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((3, 1), {"shape": (3, 4)}),
            ((1, 4), {"shape": (2, 3, 4)}),
            ((3, 1), {"shape": (-1, 5)}),
            ((), {"shape": (2, 2)}),
        ],
        quick,
    )


def slice_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((10, 4), {"axis": 0, "start": 2, "end": 8, "step": 2}),
            ((10, 4), {"axis": 0, "start": -3}),
            ((3, 9), {"axis": 1, "start": 1, "end": -1, "step": 3}),
            ((3, 9), {"axis": -1, "start": 5, "end": 100}),
            ((3, 9), {"axis": 1, "start": 7, "end": 2}),
        ],
        quick,
    )


def pad_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((1, 2, 3, 4), {"pads": (1, 1, 2, 0)}),
            ((2, 5), {"pads": (2, 3), "value": -1.5}),
            ((1, 2, 4, 4), {"pads": (-1, 1, 0, -2)}),
            ((2, 3, 4), {"pads": (0, 0, 0, 0, 1, 1)}),
        ],
        quick,
        ("f32",),
    )


def concat_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], -1),
        ([(1, 2, 3, 4), (1, 3, 3, 4)], 1),
        ([(0, 3), (2, 3)], 0),
        ([(3,)], 0),
    ]
    for shapes, axis in grid[:2] if quick else grid:
        yield make_case(op, [InputSpec(s) for s in shapes], {"axis": axis})
    if not quick:
        yield make_case(op, [InputSpec((2, 2), "i8"), InputSpec((2, 2), "i8")], {"axis": 1})


def split_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ((6, 4), {"axis": 0, "sizes": (2, 4)}),
        ((3, 9), {"axis": 1, "sizes": (3, 3, 3)}),
        ((2, 5, 2), {"axis": -2, "sizes": (1, 0, 4)}),
    ]
    for shape, attrs in grid[:1] if quick else grid:
        yield make_case(op, [InputSpec(shape)], attrs)


def index_select_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((5, 4), 0, 3), ((3, 6), 1, 7), ((2, 3, 4), -1, 2)]
    for shape, axis, n in grid[:1] if quick else grid:
        size = shape[axis]
        yield make_case(
            op, [InputSpec(shape), InputSpec((n,), "i64", f"index:{size}")], {"axis": axis}
        )


def gather_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((4, 5), (4, 3), 1), ((4, 5), (2, 5), 0), ((2, 3, 4), (2, 3, 2), -1)]
    for shape, ishape, axis in grid[:1] if quick else grid:
        size = shape[axis]
        yield make_case(
            op, [InputSpec(shape), InputSpec(ishape, "i64", f"index:{size}")], {"axis": axis}
        )


def embedding_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((10, 4), (3,)), ((7, 5), (2, 3))]
    for wshape, ishape in grid[:1] if quick else grid:
        yield make_case(
            op, [InputSpec(wshape, const=True), InputSpec(ishape, "i64", f"index:{wshape[0]}")]
        )


def narrow_cases(op: str, quick: bool) -> Iterator[Case]:
    yield from _simple(
        op,
        [
            ((10, 4), {"axis": 0, "start": 0, "length": (6,)}),
            ((3, 9), {"axis": -1, "start": 2, "length": (7,)}),
            ((3, 9), {"axis": 1, "start": 9, "length": (0,)}),
        ],
        quick,
    )


def arange_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        {"size": (7,)},
        {"size": (5,), "start": -2.0, "step": 3.0, "dtype": "i32"},
        {"size": (6,), "start": 0.5, "step": 0.1, "dtype": "f32"},
        {"size": (0,)},
    ]
    for attrs in grid[:2] if quick else grid:
        yield make_case(op, [], attrs)
