"""reduce over one or several axes against torch, NaN propagation and first-index tie-breaking."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels.reduce import reduce


def _torch(op: str, t: torch.Tensor, axes: tuple[int, ...]) -> np.ndarray:
    if op == "sum":
        return torch.sum(t, dim=axes).numpy()
    if op == "mean":
        return torch.mean(t, dim=axes).numpy()
    if op == "max":
        return torch.amax(t, dim=axes).numpy()
    if op == "min":
        return torch.amin(t, dim=axes).numpy()
    return getattr(torch, op)(t, dim=axes[0]).numpy()


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axes", [(1,), (0, 2)])
def test_reduce_matches_torch_on_a_view(
    op: str, axes: tuple[int, ...], rng: np.random.Generator
) -> None:
    x = rng.standard_normal((5, 3, 4)).astype(np.float32).transpose(1, 0, 2)  # (3, 5, 4) view
    got = host(reduce(op, x, axes))
    np.testing.assert_allclose(got, _torch(op, torch.tensor(x), axes), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce_ties_pick_first_and_nan_wins(op: str) -> None:
    x = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-1, -1, 4, 4]], np.float32)
    got = host(reduce(op, x, (1,)))
    np.testing.assert_array_equal(got, _torch(op, torch.tensor(x), (1,)))
    assert got.dtype == np.int64


def test_max_propagates_nan_and_keepdims() -> None:
    x = np.array([[1, np.nan], [2, 3]], np.float32)
    got = host(reduce("max", x, (1,), keepdims=True))
    assert got.shape == (2, 1) and np.isnan(got[0, 0]) and got[1, 0] == 3


def test_reduce_all_and_fp16(rng: np.random.Generator) -> None:
    x = rng.standard_normal((7, 9)).astype(np.float16)
    got = reduce("sum", x)
    assert got.dtype == np.float16 and got.shape == ()
    want = x.astype(np.float64).sum()
    # fp32 accumulation, one fp16 rounding at the end.
    assert abs(float(host(got)) - want) <= 2**-11 * abs(want) + 1e-3


def test_empty_max_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        reduce("max", np.zeros((2, 0), np.float32), (1,))
