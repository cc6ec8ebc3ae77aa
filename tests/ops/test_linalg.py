"""matmul and linear against torch.matmul / F.linear (f32 tolerance 1e-5 of the output's
magnitude), including 1-D operands, broadcast batch dims, ints, f16 and symbolic batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (4,)),
    ((2, 1, 3, 4), (5, 4, 6)),
    ((1, 3, 4), (7, 4, 2)),
    ((0, 3, 4), (4, 2)),
    ((3, 0), (0, 2)),
    ((2, 3, 0, 4), (4, 6)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul_matches_torch(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = randn(*sa, seed=1), randn(*sb, seed=2)
    close(run1("matmul", [a, b]), torch.matmul(t(a), t(b)))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_matmul_integers_wrap_like_torch(dtype: type) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, (2, 3, 8)).astype(dtype)
    b = rng.integers(-100, 100, (8, 5)).astype(dtype)
    close(run1("matmul", [a, b]), torch.matmul(t(a), t(b)))


def test_matmul_f16_accumulates_in_f32() -> None:
    a, b = randn(4, 64, dtype=np.float16), randn(64, 3, seed=1, dtype=np.float16)
    close(run1("matmul", [a, b]), torch.matmul(t(a), t(b)), rtol=2e-3)


def test_matmul_nan_inf_propagate() -> None:
    a, b = randn(3, 4), randn(4, 2)
    a[0, 1], a[2, 0] = np.nan, np.inf
    close(run1("matmul", [a, b]), torch.matmul(t(a), t(b)))


@pytest.mark.parametrize(
    ("sa", "sb"), [((3, 4), (5, 2)), ((), (3,)), ((2, 3, 4), (3, 4, 5)), ((4,), (3,))]
)
def test_matmul_rejects_bad_shapes(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    with pytest.raises(ShapeError, match="matmul"):
        get_op("matmul").infer_types([TensorType(sa), TensorType(sb)], {})


def test_matmul_rejects_mixed_dtypes() -> None:
    from cuvil_ref.ir.dtypes import DType

    with pytest.raises(ShapeError, match="cast"):
        get_op("matmul").infer_types([TensorType((2, 3)), TensorType((3, 2), DType.f16)], {})


def test_matmul_symbolic_batch() -> None:
    a, b = randn(5, 2, 3, 4), randn(4, 6, seed=1)
    y = run1("matmul", [a, b], shapes=[("batch", 2, 3, 4), (4, 6)])
    close(y, torch.matmul(t(a), t(b)))
    out = get_op("matmul").infer_types([TensorType(("batch", 3, "k")), TensorType(("k", 7))], {})
    assert out[0].shape == ("batch", 3, 7)


@pytest.mark.parametrize("xshape", [(5,), (3, 5), (2, 3, 5), (0, 5), (2, 0, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_torch(xshape: tuple[int, ...], with_bias: bool) -> None:
    x, w, b = randn(*xshape), randn(4, 5, seed=1), randn(4, seed=2)
    args = [x, w, b] if with_bias else [x, w]
    close(run1("linear", args), F.linear(*(t(a) for a in args)))


def test_linear_large_reduction_tolerance() -> None:
    x, w, b = randn(8, 2048), randn(1000, 2048, seed=1), randn(1000, seed=2)
    close(run1("linear", [x, w, b]), F.linear(t(x), t(w), t(b)))


def test_linear_symbolic_batch_and_errors() -> None:
    x, w = randn(3, 512), randn(10, 512, seed=1)
    close(run1("linear", [x, w], shapes=[("batch", 512), (10, 512)]), F.linear(t(x), t(w)))
    op = get_op("linear")
    with pytest.raises(ShapeError, match="features"):
        op.infer_types([TensorType((2, 5)), TensorType((4, 6))], {})
    with pytest.raises(ShapeError, match="bias"):
        op.infer_types([TensorType((2, 5)), TensorType((4, 5)), TensorType((5,))], {})
