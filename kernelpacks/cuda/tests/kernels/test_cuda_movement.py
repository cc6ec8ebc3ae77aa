"""permute / slice / concat / pad / index_select / gather against numpy and torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import movement as mv


@pytest.fixture
def x(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((3, 4, 5)).astype(np.float32)


def test_permute_and_transpose(x: np.ndarray) -> None:
    np.testing.assert_array_equal(host(mv.permute(x, (2, 0, 1))), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(host(mv.transpose(x, 0, -1)), x.swapaxes(0, 2))


def test_slice_with_steps_and_negative_steps(x: np.ndarray) -> None:
    got = host(mv.slice_(x, (None, 3, -1), (None, 0, 0), (2, -1, -2)))
    np.testing.assert_array_equal(got, x[::2, 3:0:-1, -1:0:-2])


def test_concat_of_views(x: np.ndarray) -> None:
    parts = [x, x[:, 1:3], x[:, ::-1][:, :1]]
    np.testing.assert_array_equal(host(mv.concat(parts, 1)), np.concatenate(parts, 1))


def test_pad_constant_int8() -> None:
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    got = host(mv.pad_constant(a, (1, 2, 0, 1), value=-7))
    np.testing.assert_array_equal(got, F.pad(torch.tensor(a), (1, 2, 0, 1), value=-7).numpy())


def test_index_select_and_gather(x: np.ndarray, rng: np.random.Generator) -> None:
    idx = np.array([2, -1, 0, 2])
    np.testing.assert_array_equal(host(mv.index_select(x, 1, idx)), x[:, idx % 4])
    gi = rng.integers(0, 4, (3, 2, 5))
    want = torch.gather(torch.tensor(x), 1, torch.tensor(gi)).numpy()
    np.testing.assert_array_equal(host(mv.gather(x, 1, gi)), want)


def test_out_of_range_index_is_an_error(x: np.ndarray) -> None:
    with pytest.raises(IndexError, match="index_select"):
        mv.index_select(x, 0, np.array([3]))
