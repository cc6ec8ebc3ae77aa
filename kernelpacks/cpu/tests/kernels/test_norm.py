"""softmax and log_softmax over the last axis (the contiguous-row kernel) and a middle axis."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import norm


def _ref(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    x = x.astype(np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if log else np.exp(z - lse)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("inner", [1, 3])
def test_softmax_matches_float64(log: bool, inner: int, rng: np.random.Generator) -> None:
    x = (rng.standard_normal((5, 37, inner)) * 4).astype(np.float32)
    out = np.empty_like(x)
    norm.softmax(x, out, log, np.zeros(1, np.int64))
    np.testing.assert_allclose(out, _ref(x, 1, log), rtol=1e-5, atol=1e-6)


def test_softmax_rows_keep_nan_and_all_minus_inf_meaning() -> None:
    x = np.zeros((3, 16, 1), np.float32)
    x[0, 4, 0] = np.nan
    x[1, :, 0] = -np.inf
    out = np.empty_like(x)
    norm.softmax(x, out, False, np.zeros(1, np.int64))
    assert np.isnan(out[0]).all() and np.isnan(out[1]).all()
    np.testing.assert_allclose(out[2], 1 / 16)
