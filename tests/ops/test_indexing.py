"""index_select, gather and embedding against torch, with negative axes, i32/i64 indices,
zero-size index tensors, out-of-range (and negative) indices rejected as torch does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import InterpretError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_index_select(axis: int, itype: type) -> None:
    x = randn(3, 4, 5)
    idx = np.array([0, 2, 2, 1], dtype=itype)
    close(
        run1("index_select", [x, idx], {"axis": axis}),
        torch.index_select(t(x), axis, t(idx.astype(np.int64))),
    )


def test_index_select_scalar_and_empty_index() -> None:
    x = randn(3, 4)
    for idx in (np.array(2, dtype=np.int64), np.zeros(0, dtype=np.int64)):
        close(run1("index_select", [x, idx], {"axis": 1}), torch.index_select(t(x), 1, t(idx)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(axis: int) -> None:
    x = randn(4, 5, 6)
    rng = np.random.default_rng(0)
    size = x.shape[axis]
    idx_shape = [3, 2, 4]  # smaller than x in the other dims, as torch allows
    idx_shape[axis] = 7
    idx = rng.integers(0, size, idx_shape).astype(np.int64)
    close(run1("gather", [x, idx], {"axis": axis}), torch.gather(t(x), axis, t(idx)))


def test_gather_int_values_and_empty() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    idx = np.array([[3, 0], [1, 1]], dtype=np.int32)
    close(run1("gather", [x, idx], {"axis": 1}), torch.gather(t(x), 1, t(idx.astype(np.int64))))
    empty = np.zeros((0, 2), dtype=np.int64)
    close(run1("gather", [x, empty], {"axis": 0}), torch.gather(t(x), 0, t(empty)))


@pytest.mark.parametrize("ishape", [(5,), (2, 3), (0,), ()])
def test_embedding(ishape: tuple[int, ...]) -> None:
    w = randn(10, 4)
    idx = np.random.default_rng(1).integers(0, 10, ishape).astype(np.int64)
    close(run1("embedding", [w, idx]), F.embedding(t(idx), t(w)))


@pytest.mark.parametrize(
    ("op", "x", "idx", "attrs"),
    [
        ("index_select", randn(3, 4), np.array([0, 3], dtype=np.int64), {"axis": 0}),
        ("index_select", randn(3, 4), np.array([-1], dtype=np.int64), {"axis": 0}),
        ("gather", randn(3, 4), np.array([[4]], dtype=np.int64), {"axis": 1}),
        ("gather", randn(3, 4), np.array([[-1]], dtype=np.int64), {"axis": 1}),
        ("embedding", randn(3, 4), np.array([3], dtype=np.int64), {}),
        ("embedding", randn(3, 4), np.array([-1], dtype=np.int64), {}),
    ],
)
def test_out_of_range_indices_raise_like_torch(
    op: str, x: np.ndarray, idx: np.ndarray, attrs: dict
) -> None:
    call = {
        "index_select": lambda: torch.index_select(t(x), attrs.get("axis", 0), t(idx)),
        "gather": lambda: torch.gather(t(x), attrs.get("axis", 0), t(idx)),
        "embedding": lambda: F.embedding(t(idx), t(x)),
    }[op]
    with pytest.raises((IndexError, RuntimeError)):
        call()
    with pytest.raises(InterpretError, match="out of range"):
        run1(op, [x, idx], attrs)


def test_symbolic_batch_embedding_and_gather() -> None:
    w = randn(10, 4)
    idx = np.array([[1, 2, 3], [9, 0, 0]], dtype=np.int64)
    close(
        run1("embedding", [w, idx], shapes=[(10, 4), ("batch", "seq")]), F.embedding(t(idx), t(w))
    )
    x = randn(2, 5)
    gi = np.array([[4, 0], [1, 1]], dtype=np.int64)
    close(
        run1("gather", [x, gi], {"axis": 1}, shapes=[("batch", 5), ("batch", 2)]),
        torch.gather(t(x), 1, t(gi)),
    )
    out = get_op("index_select").infer_types(
        [TensorType(("batch", 7)), TensorType(("k",), DType.i64)], {"axis": -1}
    )
    assert out[0].shape == ("batch", "k")


@pytest.mark.parametrize(
    ("op", "types", "attrs", "match"),
    [
        ("index_select", [TensorType((3,)), TensorType((2,), DType.f32)], {}, "i32 or i64"),
        ("index_select", [TensorType((3,)), TensorType((2, 2), DType.i64)], {}, "0-d or 1-d"),
        ("index_select", [TensorType(()), TensorType((1,), DType.i64)], {}, "rank"),
        ("gather", [TensorType((3, 4)), TensorType((2,), DType.i64)], {"axis": 0}, "rank"),
        ("gather", [TensorType((3, 4)), TensorType((2, 5), DType.i64)], {"axis": 0}, "larger"),
        ("embedding", [TensorType((3,)), TensorType((2,), DType.i64)], {}, "weight"),
    ],
)
def test_indexing_infer_errors(op: str, types: list, attrs: dict, match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        get_op(op).infer_types(types, attrs)
