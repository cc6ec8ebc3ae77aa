"""``aten.as_strided`` as a gather from the input's recorded strides."""

from __future__ import annotations

import pytest
import torch

from cuvil_ref.errors import CaptureError
from tests.frontend.aten._compile import compile_and_compare


def test_adaptive_avg_pool1d_of_a_transposed_input() -> None:
    # Swin's pooler. The in-place op makes the graph take the decompositions; torch lowers
    # adaptive_avg_pool1d to a 2-d pool, which Cuvil keeps whole (adaptive_avg_pool2d is
    # preserved) -- before, the pool's own decomposition restrided a mean with as_strided
    pool = torch.nn.AdaptiveAvgPool1d(1)

    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.mul_(2)
        return pool(y.transpose(1, 2))

    ops = compile_and_compare(fn, torch.randn(2, 5, 4))
    assert "adaptive_avg_pool2d" in ops and "index" not in ops


def test_as_strided_windows_of_a_contiguous_input() -> None:
    x = torch.randn(3, 4)
    compile_and_compare(lambda x: torch.as_strided(x + 1, (2, 3), (2, 1), 1), x)
    compile_and_compare(lambda x: torch.as_strided(x.t() * 2, (4, 3), (1, 4)), x)
    compile_and_compare(lambda x: torch.as_strided(x * 2, (), (), 5), x)


def test_as_strided_outside_the_input_is_refused() -> None:
    x = torch.randn(2, 2)
    with pytest.raises(CaptureError, match="as_strided"):
        compile_and_compare(lambda x: torch.as_strided(x + 1, (3, 3), (3, 1)), x)
