"""conv3d and conv_transpose (1-, 2- and 3-d) against torch over strides, padding, dilation,
groups, output_padding, integer dtypes, NaN/Inf and empty batches."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

CONV3D_GRID = list(
    itertools.product(
        [(1, 1, 1), (2, 3, 2), (3, 3, 3)],  # kernel
        [(1, 1, 1), (2, 1, 2)],  # stride
        [(0, 0, 0), (1, 0, 1)],  # padding
        [(1, 1, 1), (1, 2, 1)],  # dilation
        [1, 2],  # groups
    )
)


@pytest.mark.parametrize(("k", "stride", "pad", "dil", "groups"), CONV3D_GRID)
def test_conv3d_matches_torch(
    k: tuple[int, ...],
    stride: tuple[int, ...],
    pad: tuple[int, ...],
    dil: tuple[int, ...],
    groups: int,
) -> None:
    x = randn(2, 4, 5, 6, 7, seed=1)
    w = randn(6, 4 // groups, *k, seed=2)
    b = randn(6, seed=3)
    want = F.conv3d(t(x), t(w), t(b), stride, pad, dil, groups)
    attrs = {"stride": stride, "padding": pad + pad, "dilation": dil, "groups": groups}
    close(run1("conv3d", [x, w, b], attrs), want)


def test_conv3d_asymmetric_padding_is_a_padded_input() -> None:
    x, w = randn(1, 2, 4, 4, 4, seed=1), randn(3, 2, 2, 2, 2, seed=2)
    want = F.conv3d(F.pad(t(x), (0, 1, 1, 0, 2, 0)), t(w))
    close(run1("conv3d", [x, w], {"padding": (2, 1, 0, 0, 0, 1)}), want)


def test_conv3d_integers_wrap_like_torch() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-(2**40), 2**40, (1, 2, 3, 3, 3))
    w = rng.integers(-(2**30), 2**30, (2, 2, 2, 2, 2))
    want = F.conv3d(t(x), t(w))
    close(run1("conv3d", [x, w]), want)


def test_conv3d_nan_inf_and_empty_batch() -> None:
    x = randn(1, 1, 3, 3, 3, seed=1)
    x[0, 0, 0, 0, 0], x[0, 0, 2, 2, 2] = np.nan, np.inf
    w = randn(1, 1, 2, 2, 2, seed=2)
    close(run1("conv3d", [x, w]), F.conv3d(t(x), t(w)))
    empty = np.zeros((0, 1, 3, 3, 3), np.float32)
    close(run1("conv3d", [empty, w]), F.conv3d(t(empty), t(w)))


TRANSPOSE_GRID = list(
    itertools.product(
        [1, 2, 3],  # spatial dims
        [1, 2],  # stride
        [0, 1],  # padding
        [1, 2],  # dilation
        [0, 1],  # output_padding (< stride or dilation)
        [1, 2],  # groups
    )
)


@pytest.mark.parametrize(("nd", "s", "p", "d", "op", "groups"), TRANSPOSE_GRID)
def test_conv_transpose_matches_torch(
    nd: int, s: int, p: int, d: int, op: int, groups: int
) -> None:
    if op >= s and op >= d:
        pytest.skip("torch refuses output_padding >= stride and dilation")
    size = (5, 4, 3)[:nd]
    kernel = (3, 2, 2)[:nd]
    x = randn(2, 4, *size, seed=1)
    w = randn(4, 6 // groups, *kernel, seed=2)
    b = randn(6, seed=3)
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    want = fn(t(x), t(w), t(b), s, p, op, groups, d)
    attrs = {
        "stride": (s,) * nd,
        "padding": (p,) * nd,
        "output_padding": (op,) * nd,
        "dilation": (d,) * nd,
        "groups": groups,
    }
    close(run1("conv_transpose", [x, w, b], attrs), want)


def test_conv_transpose_int64_and_empty() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-5, 5, (1, 2, 4, 4))
    w = rng.integers(-5, 5, (2, 3, 3, 3))
    attrs = {"stride": (2, 2), "padding": (1, 1), "output_padding": (1, 0), "dilation": (1, 1)}
    close(run1("conv_transpose", [x, w], attrs), F.conv_transpose2d(t(x), t(w), None, 2, 1, (1, 0)))
    empty = np.zeros((0, 2, 4, 4), np.float32)
    want = F.conv_transpose2d(t(empty), t(w.astype(np.float32)), None, 2, 1, (1, 0))
    close(run1("conv_transpose", [empty, w.astype(np.float32)], attrs), want)


def test_conv_ops_refuse_bad_operands() -> None:
    op = get_op("conv_transpose")
    x = TensorType((1, 2, 4, 4), DType.f32)
    w = TensorType((2, 3, 3, 3), DType.f32)
    attrs = {"stride": (1, 1), "padding": (0, 0), "output_padding": (1, 1), "dilation": (1, 1)}
    with pytest.raises(ShapeError, match="output_padding"):
        op.infer_types([x, w], attrs)
    with pytest.raises(ShapeError, match="channels"):
        get_op("conv3d").infer_types(
            [TensorType((1, 3, 4, 4, 4), DType.f32), TensorType((2, 2, 1, 1, 1), DType.f32)], {}
        )
    with pytest.raises(ShapeError, match="dtype"):
        get_op("conv3d").infer_types(
            [TensorType((1, 2, 4, 4, 4), DType.f32), TensorType((2, 2, 1, 1, 1), DType.f16)], {}
        )
