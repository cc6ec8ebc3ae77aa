"""Float32 max pooling on 16-channel lanes is bit-identical to the generic kernel."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import pool


@pytest.mark.parametrize(
    "shape,geom",
    [
        ((1, 16, 16, 64), (3, 3, 2, 2, 1, 1, 1, 1)),  # ResNet's stem pooling, full lanes
        ((2, 9, 11, 20), (3, 3, 2, 2, 1, 1, 1, 1)),  # a partial lane (20 = 16 + 4)
        ((1, 10, 10, 37), (2, 3, 1, 2, 0, 1, 2, 1)),  # dilated rows, asymmetric padding
        ((1, 5, 5, 8), (5, 5, 1, 1, 2, 2, 1, 1)),  # every window reaches the padding
    ],
)
def test_max_pool_f32_matches_the_generic_kernel(shape: tuple, geom: tuple,
                                                 rng: np.random.Generator) -> None:  # fmt: skip
    n, h, w, c = shape
    kh, kw, sh, sw, pt, pl, dh, dw = geom
    oh = (h + 2 * pt - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pl - dw * (kw - 1) - 1) // sw + 1
    x = rng.standard_normal(shape).astype(np.float32)
    x[:, ::3, ::2, ::5] = np.nan  # NaN wins, and a NaN held stays
    x[:, 1::4, :, 1::3] = 0.0
    x[:, 2::4, :, 1::3] = -0.0  # a tie keeps the first tap's sign
    g = np.array(geom, np.int64)
    fill = np.float32(-np.inf)
    want = np.empty((n, oh, ow, c), np.float32)
    got = np.empty_like(want)
    pool.max_pool(x, want, g, fill, np.zeros(1, np.int64))
    pool.max_pool_f32(x, got, g, fill, np.zeros(1, np.int64))
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
