"""Normalization ops against PyTorch CPU (inference form): shapes of rank 1..4 including size-1
and size-0 dims, with and without weight/bias, several eps, f32/f16/bf16, NaN/Inf inputs and
symbolic batch/spatial dims. Tolerance: 1e-6 relative to the output's magnitude for f32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch


def params(shape: tuple[int, ...], dtype: Any, seed: int, affine: str) -> list[np.ndarray]:
    """weight/bias inputs: ``affine`` is '', 'w' or 'wb'."""
    out = []
    if "w" in affine:
        out.append(sample(shape, dtype, seed=seed + 1, scale=1.0))
    if "b" in affine:
        out.append(sample(shape, dtype, seed=seed + 2, scale=1.0))
    return out


def torch_args(arrays: list[np.ndarray], n: int) -> list[torch.Tensor | None]:
    """Tensors for torch, padded with None to ``n`` optional params."""
    return [to_torch(a) for a in arrays] + [None] * (n - len(arrays))


LAYER_CASES = [
    ((7,), (7,)),
    ((3, 5), (5,)),
    ((2, 3, 4), (3, 4)),
    ((2, 3, 4, 5), (5,)),
    ((2, 3, 4, 5), (3, 4, 5)),
    ((0, 4), (4,)),
    ((2, 1), (1,)),
    ((4, 0), (0,)),
]


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
@pytest.mark.parametrize("affine", ["", "w", "wb"])
@pytest.mark.parametrize("case", LAYER_CASES, ids=str)
def test_layer_norm_matches_torch(case: Any, affine: str, eps: float) -> None:
    shape, norm = case
    x = sample(shape, seed=1) + np.float32(2.0)
    ps = params(norm, np.float32, 1, affine)
    w, b = torch_args(ps, 2)
    expected = from_torch(F.layer_norm(to_torch(x), norm, w, b, eps))
    got = run_op("layer_norm", [x, *ps], {"normalized_shape": norm, "eps": eps})
    assert_close(got, expected)


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("affine", ["", "w"])
@pytest.mark.parametrize("case", LAYER_CASES, ids=str)
def test_rms_norm_matches_torch(case: Any, affine: str, eps: float | None) -> None:
    shape, norm = case
    x = sample(shape, seed=2)
    ps = params(norm, np.float32, 2, affine)
    (w,) = torch_args(ps, 1)
    expected = from_torch(F.rms_norm(to_torch(x), norm, w, eps))
    got = run_op("rms_norm", [x, *ps], {"normalized_shape": norm, "eps": eps})
    assert_close(got, expected)


BATCH_SHAPES = [(2, 3), (2, 3, 5), (1, 4, 3, 3), (2, 3, 0), (0, 3, 2), (3, 1, 2, 2)]


@pytest.mark.parametrize("eps", [1e-5, 1e-1])
@pytest.mark.parametrize("affine", ["", "w", "wb"])
@pytest.mark.parametrize("shape", BATCH_SHAPES, ids=str)
def test_batch_norm_matches_torch(shape: tuple[int, ...], affine: str, eps: float) -> None:
    c = shape[1]
    x = sample(shape, seed=3)
    mean = sample((c,), seed=4)
    var = np.abs(sample((c,), seed=5)) + np.float32(0.01)
    ps = params((c,), np.float32, 5, affine)
    w, b = torch_args(ps, 2)
    expected = from_torch(
        F.batch_norm(to_torch(x), to_torch(mean), to_torch(var), w, b, training=False, eps=eps)
    )
    assert_close(run_op("batch_norm", [x, mean, var, *ps], {"eps": eps}), expected)


GROUP_CASES = [
    ((2, 4), 2),
    ((2, 6, 5), 3),
    ((1, 4, 3, 3), 1),
    ((1, 4, 3, 3), 4),
    ((0, 4, 2), 2),
    ((2, 4, 0), 2),
    ((3, 6, 1, 7), 2),
]


@pytest.mark.parametrize("affine", ["", "w", "wb"])
@pytest.mark.parametrize("case", GROUP_CASES, ids=str)
def test_group_norm_matches_torch(case: Any, affine: str) -> None:
    shape, groups = case
    x = sample(shape, seed=6) - np.float32(1.5)
    ps = params((shape[1],), np.float32, 6, affine)
    w, b = torch_args(ps, 2)
    expected = from_torch(F.group_norm(to_torch(x), groups, w, b, 1e-5))
    assert_close(run_op("group_norm", [x, *ps], {"num_groups": groups}), expected)


def _all_four(x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(cuvil result, torch result) of every normalization op on a (N, C, L) input ``x``."""
    c, length = x.shape[1], x.shape[2]
    w, b = params((c,), x.dtype, 8, "wb")
    lw, lb = params((length,), x.dtype, 9, "wb")
    mean, var = sample((c,), x.dtype, seed=10), np.abs(sample((c,), x.dtype, seed=11)) + 0.5
    var = var.astype(x.dtype)
    t = to_torch
    return [
        (
            run_op("layer_norm", [x, lw, lb], {"normalized_shape": (length,)}),
            from_torch(F.layer_norm(t(x), (length,), t(lw), t(lb))),
        ),
        (
            run_op("rms_norm", [x, lw], {"normalized_shape": (length,)}),
            from_torch(F.rms_norm(t(x), (length,), t(lw))),
        ),
        (
            run_op("batch_norm", [x, mean, var, w, b]),
            from_torch(F.batch_norm(t(x), t(mean), t(var), t(w), t(b), training=False)),
        ),
        (
            run_op("group_norm", [x, w, b], {"num_groups": 2}),
            from_torch(F.group_norm(t(x), 2, t(w), t(b))),
        ),
    ]


def test_nan_and_inf_inputs_match_torch() -> None:
    x = sample((3, 4, 6), seed=12)
    x[0, 1, 2] = np.nan
    x[1, 3, 0] = np.inf
    x[2, 0, 5] = -np.inf
    for got, expected in _all_four(x):
        assert_close(got, expected)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_half_types_match_torch(dtype: Any) -> None:
    x = sample((2, 4, 9), dtype, seed=13)
    for got, expected in _all_four(x):
        # torch computes some of these in a different order; allow two rounding steps.
        assert_close(
            got,
            expected,
            tol=2 * float(np.finfo(np.float16).eps) if dtype == np.float16 else 2.0**-6,
        )


def test_symbolic_dims() -> None:
    x = sample((5, 4, 3), seed=14)
    w, b = params((4,), np.float32, 14, "wb")
    lw, lb = params((3,), np.float32, 15, "wb")
    mean, var = sample((4,), seed=16), np.abs(sample((4,), seed=17)) + np.float32(0.5)
    sym = ("batch", 4, "length")
    cases = [
        ("layer_norm", [x, lw, lb], {"normalized_shape": (3,)}, [("batch", 4, 3), (3,), (3,)]),
        ("rms_norm", [x, lw], {"normalized_shape": (3,)}, [("batch", 4, 3), (3,)]),
        ("batch_norm", [x, mean, var, w, b], {}, [sym, (4,), (4,), (4,), (4,)]),
        ("group_norm", [x, w, b], {"num_groups": 2}, [sym, (4,), (4,)]),
    ]
    for op, inputs, attrs, shapes in cases:
        assert_close(run_op(op, inputs, attrs, shapes=shapes), run_op(op, inputs, attrs), tol=0.0)


def test_symbolic_channels_must_match_params() -> None:
    x = sample((2, 4, 3), seed=18)
    p = sample((4,), seed=19)
    got = run_op("batch_norm", [x, p, np.abs(p)], shapes=[(2, "c", 3), ("c",), ("c",)])
    assert got.shape == (2, 4, 3)
    with pytest.raises(ShapeError, match="mean has shape"):
        run_op("batch_norm", [x, p, np.abs(p)], shapes=[(2, "c", 3), (4,), (4,)])
    with pytest.raises(ShapeError, match="channel dim must be static"):
        run_op("group_norm", [x], {"num_groups": 2}, shapes=[(2, "c", 3)])
    with pytest.raises(ShapeError, match="static and equal"):
        run_op("layer_norm", [x], {"normalized_shape": (3,)}, shapes=[(2, 4, "n")])


def test_bad_inputs_are_shape_errors() -> None:
    x = sample((2, 4, 3), seed=20)
    with pytest.raises(ShapeError, match="does not end with"):
        run_op("layer_norm", [x], {"normalized_shape": (4,)})
    with pytest.raises(ShapeError, match="at least one"):
        run_op("layer_norm", [x], {"normalized_shape": ()})
    with pytest.raises(ShapeError, match="weight has shape"):
        run_op("layer_norm", [x, sample((4,))], {"normalized_shape": (3,)})
    with pytest.raises(ShapeError, match="weight has dtype f16"):
        run_op("layer_norm", [x, sample((3,), np.float16)], {"normalized_shape": (3,)})
    with pytest.raises(ShapeError, match="divide C=4"):
        run_op("group_norm", [x], {"num_groups": 3})
    with pytest.raises(ShapeError, match="rank >= 2"):
        run_op("batch_norm", [sample((4,)), sample((4,)), sample((4,))])
    with pytest.raises(ShapeError, match="takes 3 to 5 inputs"):
        run_op("batch_norm", [x, sample((4,))])
