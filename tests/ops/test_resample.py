"""upsample_bilinear2d and grid_sample against torch: sizes and scale factors up and down,
align_corners both ways, every mode and padding mode, large images (where float32 coordinate
rounding shows), NaN/Inf in the grid."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import randn, run1, t


def _same(got: np.ndarray, want: torch.Tensor) -> None:
    # the harness's bound (rtol 1e-4, atol 1e-5): differences in float32 coordinates would show
    torch.testing.assert_close(t(got), want, rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize(
    ("hw", "out"), [((4, 5), (7, 3)), ((345, 456), (270, 270)), ((1, 1), (3, 2))]
)
def test_upsample_bilinear2d_sizes(align: bool, hw: tuple[int, int], out: tuple[int, int]) -> None:
    x = randn(1, 2, *hw, seed=1) * 3
    want = F.interpolate(t(x), out, mode="bilinear", align_corners=align)
    _same(run1("upsample_bilinear2d", [x], {"size": out, "align_corners": align}), want)


@pytest.mark.parametrize("scale", [(0.5, 1.7), (2.0, 3.3), (1.25, 0.6)])
def test_upsample_bilinear2d_scale_factors(scale: tuple[float, float]) -> None:
    x = randn(2, 3, 9, 7, seed=2)
    want = F.interpolate(t(x), scale_factor=scale, mode="bilinear")
    attrs = {"size": tuple(want.shape[2:]), "scale_h": scale[0], "scale_w": scale[1]}
    _same(run1("upsample_bilinear2d", [x], attrs), want)


GRID = list(
    itertools.product(
        ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]
    )
)


@pytest.mark.parametrize(("mode", "padding", "align"), GRID)
def test_grid_sample_matches_torch(mode: str, padding: str, align: bool) -> None:
    for hw, seed in (((5, 7), 3), ((300, 420), 4), ((1, 3), 5)):
        x = randn(2, 2, *hw, seed=seed) * 50
        g = randn(2, 6, 9, 2, seed=seed + 10) * 1.5
        g[0, 0, 0, 0], g[1, 1, 1, 1], g[1, 2, 1, 0] = np.nan, np.inf, -np.inf
        want = F.grid_sample(t(x), t(g), mode=mode, padding_mode=padding, align_corners=align)
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        _same(run1("grid_sample", [x, g], attrs), want)


def test_resample_infer_errors() -> None:
    with pytest.raises(ShapeError, match="N, C, H, W"):
        get_op("upsample_bilinear2d").infer_types([TensorType((3, 4, 4))], {"size": (2, 2)})
    with pytest.raises(ShapeError, match="grid"):
        get_op("grid_sample").infer_types([TensorType((1, 1, 4, 4)), TensorType((1, 2, 2, 3))], {})
