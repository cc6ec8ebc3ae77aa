"""index, index_put and masked_scatter against torch: adjacent and separated index tensors,
broadcasting, negative indices, boolean masks in writes, accumulate with repeats, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

X = randn(4, 5, 6, seed=1)
IDX = np.array([[0, -1], [2, 3]])
JDX = np.array([1, -5])


@pytest.mark.parametrize(
    ("axes", "key"),
    [
        ((0,), lambda x, i, j: x[i]),
        ((1,), lambda x, i, j: x[:, j]),
        ((0, 1), lambda x, i, j: x[i, j]),  # adjacent: B in place
        ((0, 2), lambda x, i, j: x[i, :, j]),  # separated: B first
        ((1, 2), lambda x, i, j: x[:, i, j]),
    ],
)
def test_index_matches_torch(axes: tuple[int, ...], key) -> None:  # noqa: ANN001
    picks = [IDX, JDX] if len(axes) == 2 else [IDX if axes == (0,) else JDX]
    want = key(t(X), t(IDX), t(JDX))
    got = run1("index", [X, *picks], {"axes": axes})
    close(got, want)


def test_index_int32_indices_bool_data_and_empty() -> None:
    xb = np.random.default_rng(0).random((3, 4)) < 0.5
    idx = np.array([2, 0, 2], dtype=np.int32)
    close(run1("index", [xb, idx], {"axes": (0,)}), t(xb)[t(idx).long()])
    empty = np.zeros((0,), dtype=np.int64)
    close(run1("index", [X, empty], {"axes": (1,)}), t(X)[:, t(empty)])
    # a 0-d index drops the dim: a 1-d tensor gives a 0-d result
    flat = X.reshape(-1)
    got = run1("index", [flat, np.array(7)], {"axes": (0,)})
    assert got.shape == () and got == flat[7]


def test_index_out_of_range_is_an_error() -> None:
    with pytest.raises(InterpretError, match="out of range"):
        run1("index", [X, np.array([4])], {"axes": (0,)})


def test_index_refuses_masks_and_bad_axes() -> None:
    op = get_op("index")
    with pytest.raises(ShapeError, match="data-dependent"):
        op.infer_types([TensorType((4, 5)), TensorType((4,), DType.bool)], {"axes": (0,)})
    with pytest.raises(ShapeError, match="increase"):
        op.infer_types(
            [TensorType((4, 5)), TensorType((2,), DType.i64), TensorType((2,), DType.i64)],
            {"axes": (1, 0)},
        )


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate: bool) -> None:
    rows = np.array([0, 2, 0, 3])  # a repeated row: accumulate adds twice
    values = randn(4, 6, seed=2)
    want = t(X).index_put((t(rows), t(np.array([1, 1, 1, 4]))), t(values), accumulate)
    got = run1(
        "index_put",
        [X, values, rows, np.array([1, 1, 1, 4])],
        {"axes": (0, 1), "accumulate": accumulate},
    )
    close(got, want)


def test_index_put_with_mask_and_scalar_values() -> None:
    mask = X > 0
    v = np.asarray(-1.0, dtype=np.float32)
    want = t(X).index_put((t(mask),), t(v))
    close(run1("index_put", [X, v, mask], {"axes": (0,)}), want)
    rowmask = np.array([True, False, True, False])
    want = t(X).index_put((t(rowmask),), t(randn(6, seed=3)), accumulate=True)
    got = run1("index_put", [X, randn(6, seed=3), rowmask], {"axes": (0,), "accumulate": True})
    close(got, want)


def test_index_put_last_write_wins_on_repeats() -> None:
    x = np.zeros(5, np.float32)
    idx = np.array([1, 1, 1])
    v = np.array([1.0, 2.0, 3.0], np.float32)
    assert run1("index_put", [x, v, idx], {"axes": (0,)})[1] == 3.0
    assert torch.zeros(5).index_put((t(idx),), t(v))[1] == 3.0


def test_masked_scatter_matches_torch() -> None:
    mask = np.random.default_rng(3).random((5, 6)) < 0.4
    source = randn(70, seed=4)
    want = t(X).masked_scatter(t(mask), t(source))
    close(run1("masked_scatter", [X, mask, source]), want)
    with pytest.raises(InterpretError, match="true elements"):
        run1("masked_scatter", [X, np.ones((4, 5, 6), bool), source])
