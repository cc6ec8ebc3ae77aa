"""Reduction ops against PyTorch CPU over many shapes (rank 0..4, size 1, size 0), axes (negative,
several, None, ()), keepdim, dtypes and edge values. Tolerance: 1e-6 relative to the output's
magnitude for f32 (Cuvil accumulates in f64, torch in f32); softmax/log_softmax 2e-6."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch

Axes = tuple[int, ...] | None


def _torch_prod(t: torch.Tensor, dim: Axes, keepdim: bool) -> torch.Tensor:
    """torch.prod takes one dim; reduce several one at a time (highest first)."""
    dims = range(t.dim()) if not dim else sorted({d % max(t.dim(), 1) for d in dim})
    if t.dim() == 0:
        return torch.prod(t)
    for d in sorted(dims, reverse=True):
        t = torch.prod(t, d, keepdim=keepdim)
    return t


TORCH: dict[str, Callable[[torch.Tensor, Axes, bool], torch.Tensor]] = {
    "sum": lambda t, d, k: torch.sum(t, dim=d, keepdim=k),
    "mean": lambda t, d, k: torch.mean(t, dim=d, keepdim=k),
    "prod": _torch_prod,
    "amax": lambda t, d, k: torch.amax(t, dim=d or (), keepdim=k),
    "amin": lambda t, d, k: torch.amin(t, dim=d or (), keepdim=k),
    "var": lambda t, d, k: torch.var(t, dim=d, keepdim=k),
    "std": lambda t, d, k: torch.std(t, dim=d, keepdim=k),
}

SHAPE_AXES: list[tuple[tuple[int, ...], Axes]] = [
    ((), None),
    ((), (0,)),
    ((), (-1,)),
    ((7,), None),
    ((7,), (0,)),
    ((1,), (-1,)),
    ((3, 5), (1,)),
    ((3, 5), (-2,)),
    ((3, 5), (0, 1)),
    ((4, 6), ()),
    ((2, 1, 9), (0, 2)),
    ((2, 3, 4, 5), (1, 3)),
    ((2, 3, 4, 5), (-1, 0)),
    ((2, 3, 4, 5), None),
    ((2, 0, 3), (2,)),
    ((2, 0, 3), (1,)),
    ((2, 0, 3), None),
]


def torch_reduce(op: str, x: np.ndarray, axes: Axes, keepdim: bool) -> np.ndarray | None:
    """torch's result, or None where torch raises (amax/amin over an empty axis)."""
    try:
        return from_torch(TORCH[op](to_torch(x), axes, keepdim))
    except (RuntimeError, IndexError):
        return None


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.var: degrees of freedom <= 0
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape_axes", SHAPE_AXES, ids=str)
@pytest.mark.parametrize("op", list(TORCH))
def test_f32_matches_torch(op: str, shape_axes: Any, keepdim: bool) -> None:
    shape, axes = shape_axes
    x = sample(shape, seed=2, scale=1.0 if op == "prod" else 3.0)
    expected = torch_reduce(op, x, axes, keepdim)
    attrs = {"axes": axes, "keepdim": keepdim}
    if expected is None:
        assert op in ("amax", "amin")
        with pytest.raises(ShapeError, match="size 0|empty"):
            run_op(op, [x], attrs)
        return
    assert_close(run_op(op, [x], attrs), expected)


@pytest.mark.parametrize("op", list(TORCH))
def test_edge_values_match_torch(op: str) -> None:
    x = sample((6, 11), seed=5, edge=True)
    x[0] = 1.0
    x[1, :3] = [np.inf, -np.inf, 1.0]
    x[2, :3] = [np.nan, np.inf, 2.0]
    for axes in [(1,), (0,), None]:
        assert_close(run_op(op, [x], {"axes": axes}), torch_reduce(op, x, axes, False))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin"])
def test_ints_and_bool_match_torch(op: str, dtype: Any) -> None:
    x = sample((3, 4, 5), dtype, seed=4)
    for axes in [(1,), (0, 2), None]:
        got = run_op(op, [x], {"axes": axes})
        assert_close(got, torch_reduce(op, x, axes, False))


def test_int_sum_is_i64_and_wraps_like_torch() -> None:
    x = np.full((4,), np.iinfo(np.int64).max, dtype=np.int64)
    assert_close(run_op("sum", [x]), from_torch(torch.sum(to_torch(x))))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", list(TORCH))
def test_half_types_match_torch(op: str, dtype: Any) -> None:
    x = sample((5, 13), dtype, seed=6, scale=1.0)
    assert_close(run_op(op, [x], {"axes": (1,)}), torch_reduce(op, x, (1,), False))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("correction", [0, 1, 2, 5, 1.3, 0.5, -1.0])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_correction_matches_torch(op: str, correction: float) -> None:
    fn = torch.var if op == "var" else torch.std
    for shape, axes in [((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((4,), None), ((2, 1), (1,))]:
        x = sample(shape, seed=7)
        expected = from_torch(fn(to_torch(x), dim=axes, correction=correction))
        assert_close(run_op(op, [x], {"axes": axes, "correction": correction}), expected)


ARG_CASES: list[tuple[tuple[int, ...], int | None]] = [
    ((), None),
    ((), 0),
    ((), -1),
    ((7,), 0),
    ((7,), None),
    ((3, 5), 1),
    ((3, 5), -2),
    ((2, 3, 4, 5), 2),
    ((2, 3, 4, 5), None),
    ((2, 1, 3), 1),
    ((0, 3), 1),
]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("case", ARG_CASES, ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_match_torch(op: str, case: Any, keepdim: bool) -> None:
    shape, axis = case
    # Few distinct values, so ties are common; NaNs in some rows.
    x = np.asarray(np.round(sample(shape, seed=8, edge=True) / 3.0), dtype=np.float32)
    expected = from_torch(getattr(torch, op)(to_torch(x), dim=axis, keepdim=keepdim))
    assert_close(run_op(op, [x], {"axis": axis, "keepdim": keepdim}), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.float16, BF16])
def test_argmax_dtypes_match_torch(dtype: Any) -> None:
    x = sample((4, 7), dtype, seed=10)
    expected = from_torch(torch.argmax(to_torch(x), dim=1))
    assert_close(run_op("argmax", [x], {"axis": 1}), expected)


def test_argmax_ties_and_nan_follow_torch() -> None:
    x = np.array(
        [[1, 3, 3, 0], [1, np.nan, 5, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(run_op("argmax", [x], {"axis": 1}), [1, 1, 0])
    np.testing.assert_array_equal(run_op("argmin", [x], {"axis": 1}), [3, 1, 0])


@pytest.mark.parametrize("op", ["amax", "amin", "argmax"])
def test_empty_reduction_axis_is_a_shape_error(op: str) -> None:
    attrs = {"axis": 0} if op == "argmax" else {"axes": (0,)}
    with pytest.raises(ShapeError, match="empty|size 0"):
        run_op(op, [np.zeros((0, 3), np.float32)], attrs)
    # With a symbolic dim, inference cannot tell; the interpreter raises instead.
    with pytest.raises(ShapeError, match="empty|size 0"):
        run_op(op, [np.zeros((0, 3), np.float32)], attrs, shapes=[("n", 3)])


def test_bad_axes_and_dtypes_are_shape_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ShapeError, match="out of range"):
        run_op("sum", [x], {"axes": (2,)})
    with pytest.raises(ShapeError, match="repeated"):
        run_op("sum", [x], {"axes": (1, -1)})
    with pytest.raises(ShapeError, match="out of range"):
        run_op("softmax", [x], {"axis": -3})
    with pytest.raises(ShapeError, match="rank-0"):
        run_op("sum", [np.float32(1.0).reshape(())], {"axes": (1,)})
    with pytest.raises(ShapeError, match="i32"):
        run_op("mean", [np.zeros(3, np.int32)])
    with pytest.raises(ShapeError, match="bool"):
        run_op("argmax", [np.zeros(3, np.bool_)])


SOFTMAX_CASES = [
    ((), 0),
    ((7,), 0),
    ((1,), -1),
    ((3, 5), 1),
    ((3, 5), 0),
    ((2, 3, 4), -2),
    ((2, 3, 4, 5), 3),
    ((2, 0, 3), 2),
    ((3, 0), 1),
]


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_matches_torch(op: str, case: Any) -> None:
    shape, axis = case
    x = sample(shape, seed=11, scale=5.0)
    expected = from_torch(getattr(torch, op)(to_torch(x), dim=axis))
    assert_close(run_op(op, [x], {"axis": axis}), expected, tol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_edge_rows_match_torch(op: str, dtype: Any) -> None:
    inf, nan = np.inf, np.nan
    rows = [
        [-inf, -inf, -inf],
        [-inf, 1.0, 2.0],
        [inf, 1.0, 2.0],
        [nan, 1.0, 2.0],
        [1e4, -1e4, 0.0],
        [88.0, 88.0, 88.0],
        [0.0, 0.0, 0.0],
    ]
    x = np.array(rows, dtype=dtype)
    expected = from_torch(getattr(torch, op)(to_torch(x), dim=1))
    tol = 2e-6 if dtype == np.float32 else None
    assert_close(run_op(op, [x], {"axis": 1}), expected, tol=tol)


SYMBOLIC_CASES: list[tuple[str, dict[str, Any], tuple[Any, ...]]] = [
    ("sum", {"axes": (1,), "keepdim": True}, ("batch", 1, 4)),
    ("mean", {"axes": (0,)}, (3, 4)),  # reduces the symbolic axis away
    ("amax", {"axes": (-1,)}, ("batch", 3)),
    ("var", {"axes": (1, 2)}, ("batch",)),
    ("argmax", {"axis": -1, "keepdim": True}, ("batch", 3, 1)),
    ("softmax", {"axis": 1}, ("batch", 3, 4)),
    ("log_softmax", {"axis": 0}, ("batch", 3, 4)),
]


@pytest.mark.parametrize("case", SYMBOLIC_CASES, ids=lambda c: c[0])
def test_symbolic_batch_dim(case: Any) -> None:
    op, attrs, out_shape = case
    (inferred,) = get_op(op).infer_types([TensorType(("batch", 3, 4))], attrs)
    assert inferred.shape == out_shape
    for batch in (1, 5):
        x = sample((batch, 3, 4), seed=batch)
        got = run_op(op, [x], attrs, shapes=[("batch", 3, 4)])
        assert_close(got, run_op(op, [x], attrs), tol=0.0)  # same as the static graph
