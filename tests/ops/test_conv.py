"""conv2d against F.conv2d over strides, asymmetric padding, dilation, groups (depthwise too),
1x1 and 7x7 kernels and odd sizes. f32 tolerance: 1e-5 of the output's magnitude."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t


def _check(
    n: int,
    c: int,
    h: int,
    w: int,
    o: int,
    k: tuple[int, int],
    stride: tuple[int, int],
    pad: tuple[int, int, int, int],
    dilation: tuple[int, int],
    groups: int,
    bias: bool = True,
    dtype: type = np.float32,
    rtol: float = 1e-5,
) -> None:
    x = randn(n, c, h, w, seed=1, dtype=dtype)
    wt = randn(o, c // groups, *k, seed=2, dtype=dtype)
    args = [x, wt] + ([randn(o, seed=3, dtype=dtype)] if bias else [])
    attrs = {"stride": stride, "padding": pad, "dilation": dilation, "groups": groups}
    top, left, bottom, right = pad
    xt = F.pad(t(x), (left, right, top, bottom))
    want = F.conv2d(xt, t(wt), t(args[2]) if bias else None, stride, 0, dilation, groups)
    close(run1("conv2d", args, attrs), want, rtol)


GRID = list(
    itertools.product(
        [(1, 1), (3, 3), (2, 3), (5, 5)],  # kernel
        [(1, 1), (2, 2), (1, 3)],  # stride
        [(0, 0, 0, 0), (1, 1, 1, 1), (2, 0, 1, 3)],  # padding (top, left, bottom, right)
        [(1, 1), (2, 1)],  # dilation
    )
)


@pytest.mark.parametrize(("k", "stride", "pad", "dil"), GRID)
def test_conv2d_grid_dense(
    k: tuple[int, int],
    stride: tuple[int, int],
    pad: tuple[int, int, int, int],
    dil: tuple[int, int],
) -> None:
    # 20 input channels: wide enough to take the shift-and-GEMM path for small kernels.
    _check(2, 20, 11, 9, 6, k, stride, pad, dil, 1)


@pytest.mark.parametrize(
    ("k", "stride", "pad"),
    [
        ((3, 3), (1, 1), (1, 1, 1, 1)),
        ((3, 3), (2, 2), (0, 1, 1, 0)),
        ((5, 5), (2, 1), (2, 2, 2, 2)),
    ],
)
@pytest.mark.parametrize(
    ("c", "o", "groups"), [(8, 8, 8), (8, 16, 8), (8, 24, 4), (36, 18, 2), (4, 6, 2)]
)
def test_conv2d_groups_and_depthwise(
    k: tuple[int, int],
    stride: tuple[int, int],
    pad: tuple[int, int, int, int],
    c: int,
    o: int,
    groups: int,
) -> None:
    _check(2, c, 9, 10, o, k, stride, pad, (1, 1), groups)


@pytest.mark.parametrize(
    ("n", "c", "h", "w", "o", "k", "s", "p", "bias"),
    [
        (1, 3, 33, 31, 8, (7, 7), (2, 2), (3, 3, 3, 3), False),  # ResNet stem, odd sizes
        (2, 1, 8, 8, 4, (3, 3), (1, 1), (1, 1, 1, 1), True),  # one input channel
        (1, 64, 7, 7, 32, (3, 3), (1, 1), (1, 1, 1, 1), True),  # deep reduction
        (1, 32, 9, 9, 16, (1, 1), (2, 2), (0, 0, 0, 0), True),  # 1x1 downsample
        (1, 16, 3, 3, 4, (3, 3), (1, 1), (0, 0, 0, 0), True),  # output 1x1
        (3, 5, 6, 4, 2, (6, 4), (1, 1), (0, 0, 0, 0), True),  # kernel = input
        (1, 32, 4, 4, 64, (3, 3), (1, 1), (1, 1, 1, 1), True),  # small image, many channels
    ],
)
def test_conv2d_shapes(
    n: int,
    c: int,
    h: int,
    w: int,
    o: int,
    k: tuple[int, int],
    s: tuple[int, int],
    p: tuple[int, int, int, int],
    bias: bool,
) -> None:
    _check(n, c, h, w, o, k, s, p, (1, 1), 1, bias)


@pytest.mark.parametrize(("xs", "ws"), [((0, 4, 5, 5), (3, 4, 3, 3)), ((0, 4, 5, 5), (4, 2, 1, 1))])
def test_conv2d_zero_batch(xs: tuple[int, ...], ws: tuple[int, ...]) -> None:
    x, w, b = randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2)
    groups = xs[1] // ws[1]
    close(run1("conv2d", [x, w, b], {"groups": groups}), F.conv2d(t(x), t(w), t(b), groups=groups))


def test_conv2d_f16_and_int() -> None:
    _check(1, 16, 6, 6, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, dtype=np.float16, rtol=3e-3)
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (1, 4, 6, 6)).astype(np.int64)
    w = rng.integers(-9, 9, (3, 4, 3, 3)).astype(np.int64)
    close(run1("conv2d", [x, w], {"padding": (1, 1, 1, 1)}), F.conv2d(t(x), t(w), padding=1))


def test_conv2d_nan_inf_propagate() -> None:
    x, w = randn(1, 16, 6, 6), randn(4, 16, 3, 3, seed=1)
    x[0, 3, 2, 2], x[0, 5, 0, 4] = np.nan, np.inf
    close(run1("conv2d", [x, w]), F.conv2d(t(x), t(w)))


def test_conv2d_symbolic_batch() -> None:
    x, w, b = randn(3, 16, 8, 8), randn(8, 16, 3, 3, seed=1), randn(8, seed=2)
    attrs = {"stride": (2, 2), "padding": (1, 1, 1, 1)}
    y = run1("conv2d", [x, w, b], attrs, shapes=[("batch", 16, 8, 8), (8, 16, 3, 3), (8,)])
    close(y, F.conv2d(t(x), t(w), t(b), 2, 1))


@pytest.mark.parametrize(
    ("xs", "ws", "attrs", "match"),
    [
        ((1, 4, 5, 5), (2, 3, 3, 3), {}, "channels"),
        ((1, 4, 5, 5), (3, 2, 3, 3), {"groups": 2}, "divisible"),
        ((1, 4, 2, 2), (2, 4, 3, 3), {}, "does not fit"),
        ((1, 4, 5, 5), (2, 4, 3, 3), {"padding": (1, 1)}, "padding"),
        ((1, 4, 5, 5), (2, 4, 3, 3), {"stride": (0, 1)}, "stride"),
        ((1, 4, "h", 5), (2, 4, 3, 3), {}, "symbolic"),
        ((4, 5, 5), (2, 4, 3, 3), {}, "conv2d"),
        ((1, 0, 5, 5), (2, 0, 3, 3), {}, "zero input channels"),
    ],
)
def test_conv2d_infer_errors(xs: tuple, ws: tuple, attrs: dict, match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        get_op("conv2d").infer_types([TensorType(xs), TensorType(ws)], attrs)


def test_conv2d_output_is_read_as_nchw_values() -> None:
    x, w = randn(1, 32, 6, 5), randn(8, 32, 3, 3, seed=1)
    y = run1("conv2d", [x, w])
    assert np.array_equal(np.ascontiguousarray(y).reshape(-1), y.reshape(-1))
    assert torch.equal(t(y), torch.from_numpy(np.ascontiguousarray(y)))


@pytest.mark.parametrize("scheme", ["_im2col", "_shift_gemm"])
@pytest.mark.parametrize(
    ("c", "o", "groups", "stride", "dil"), [(6, 4, 1, (2, 3), (2, 1)), (6, 9, 3, (1, 2), (1, 2))]
)
def test_both_gemm_schemes_match_torch(
    scheme: str, c: int, o: int, groups: int, stride: tuple[int, int], dil: tuple[int, int]
) -> None:
    """Each scheme on its own, whichever one the size heuristic would pick."""
    from cuvil_ref.ops import conv

    x, w = randn(2, c, 10, 11), randn(o, c // groups, 3, 2, seed=1)
    pad = (1, 0, 2, 1)
    want = F.conv2d(F.pad(t(x), (0, 1, 1, 2)), t(w), None, stride, 0, dil, groups)
    oh, ow = want.shape[2:]
    got = getattr(conv, scheme)(x, w, np.dtype(np.float32), groups, stride, pad, dil, oh, ow)
    close(np.ascontiguousarray(got.transpose(0, 3, 1, 2)), want)
