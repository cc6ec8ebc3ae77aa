"""max/avg/adaptive pooling against torch: ceil_mode, count_include_pad, dilation, NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import pool


@pytest.mark.parametrize(
    ("k", "s", "p", "ceil", "cip"),
    [
        (3, 2, 1, True, False),
        (3, 2, 1, True, True),
        (2, 2, 0, False, True),
        ((3, 2), (2, 1), (1, 0), True, True),
    ],
)
def test_avg_and_max_pool(k: object, s: object, p: object, ceil: bool, cip: bool,
                          rng: np.random.Generator) -> None:  # fmt: skip
    x = rng.standard_normal((1, 2, 7, 6)).astype(np.float32)
    t = torch.tensor(x)
    got_avg = host(pool.avg_pool2d(x, k, s, p, ceil, cip))
    np.testing.assert_allclose(got_avg, F.avg_pool2d(t, k, s, p, ceil, cip).numpy(), atol=1e-6)
    got_max = host(pool.max_pool2d(x, k, s, p, 1, ceil))
    np.testing.assert_array_equal(got_max, F.max_pool2d(t, k, s, p, 1, ceil).numpy())


def test_max_pool_dilation_and_nan(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 1, 7, 7)).astype(np.float32)
    x[0, 0, 3, 3] = np.nan  # row/col 3 is sampled by the dilated windows
    got = host(pool.max_pool2d(x, 3, 2, 1, dilation=2))
    want = F.max_pool2d(torch.tensor(x), 3, 2, 1, dilation=2).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).any()


def test_adaptive_avg_pool(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 2, 7, 5)).astype(np.float32)
    got = host(pool.adaptive_avg_pool2d(x, (3, 4)))
    np.testing.assert_allclose(
        got, F.adaptive_avg_pool2d(torch.tensor(x), (3, 4)).numpy(), atol=1e-6
    )


def test_divisor_override(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    got = host(pool.avg_pool2d(x, 2, divisor_override=3))
    np.testing.assert_allclose(got, F.avg_pool2d(torch.tensor(x), 2, divisor_override=3).numpy())
