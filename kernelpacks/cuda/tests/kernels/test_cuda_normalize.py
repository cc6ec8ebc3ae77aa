"""softmax / log_softmax / layer_norm / batch_norm against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import normalize as nz


@pytest.mark.parametrize(("shape", "axis"), [((2, 37, 2), 1), ((3, 37), -1)])
def test_softmax_and_log_softmax(
    shape: tuple[int, ...], axis: int, rng: np.random.Generator
) -> None:
    # 37 > the simulator's 32-thread block, so threads stride over the row.
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    t = torch.tensor(x)
    np.testing.assert_allclose(host(nz.softmax(x, axis)), F.softmax(t, axis).numpy(), atol=1e-6)
    np.testing.assert_allclose(
        host(nz.log_softmax(x, axis)), F.log_softmax(t, axis).numpy(), atol=1e-5
    )


def test_softmax_nan_row_and_minus_inf() -> None:
    x = np.array([[1.0, np.nan, 2.0], [0.0, -np.inf, 0.0]], np.float32)
    got = host(nz.softmax(x))
    np.testing.assert_allclose(got, F.softmax(torch.tensor(x), -1).numpy(), equal_nan=True)


def test_layer_norm_last_two_dims(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 5, 7)).astype(np.float32) + 3
    w = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((5, 7)).astype(np.float32)
    got = host(nz.layer_norm(x, (5, 7), w, b, eps=1e-3))
    want = F.layer_norm(torch.tensor(x), (5, 7), torch.tensor(w), torch.tensor(b), eps=1e-3)
    np.testing.assert_allclose(got, want.numpy(), atol=2e-5)
    plain = host(nz.layer_norm(x, (7,)))
    np.testing.assert_allclose(plain, F.layer_norm(torch.tensor(x), (7,)).numpy(), atol=2e-5)


def test_batch_norm_inference(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    mean, var = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32)
    w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    got = host(nz.batch_norm(x, mean, var, w, b, eps=1e-5))
    want = F.batch_norm(*(torch.tensor(v) for v in (x, mean, var, w, b)), training=False, eps=1e-5)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_layer_norm_shape_error_names_op() -> None:
    with pytest.raises(ValueError, match="layer_norm"):
        nz.layer_norm(np.zeros((2, 3), np.float32), (2,))
