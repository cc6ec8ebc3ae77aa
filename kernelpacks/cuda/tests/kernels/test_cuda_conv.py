"""conv2d as implicit GEMM against torch: stride, padding, dilation, groups, depthwise, epilogue."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels.conv import conv2d
from cuvil_kernels_cuda.kernels.epilogue import Epilogue

CASES = [
    # (cin, cout, groups, kernel, stride, padding, dilation)
    (3, 5, 1, 3, 2, 1, 1),
    (4, 6, 2, (3, 2), (1, 2), (0, 1), 1),
    (4, 4, 4, 3, 1, 2, 2),  # depthwise, dilated
]


@pytest.mark.parametrize(("cin", "cout", "groups", "k", "s", "p", "d"), CASES)
def test_conv2d_matches_torch(cin: int, cout: int, groups: int, k: object, s: object, p: object,
                              d: object, rng: np.random.Generator) -> None:  # fmt: skip
    kh, kw = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((2, cin, 7, 6)).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups, kh, kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    got = host(conv2d(x, w, b, s, p, d, groups))
    want = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), s, p, d, groups).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_bias_residual_relu_epilogue(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    r = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    ep = Epilogue("relu", residual_before_activation=True)
    got = host(conv2d(x, w, b, padding=1, residual=r, epilogue=ep))
    want = F.relu(
        F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=1) + torch.tensor(r)
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_conv2d_fp16(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 2, 5, 4)).astype(np.float16)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float16)
    got = conv2d(x, w, padding=1)
    assert got.dtype == np.float16
    want = F.conv2d(
        torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), padding=1
    )
    np.testing.assert_allclose(host(got).astype(np.float64), want.numpy(), rtol=2**-11, atol=2e-3)


def test_bad_groups_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="groups=2"):
        conv2d(np.zeros((1, 3, 4, 4), np.float32), np.zeros((4, 1, 3, 3), np.float32), groups=2)
