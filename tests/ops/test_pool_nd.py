"""max_pool3d, avg_pool3d, adaptive_avg_pool3d and max_pool_with_indices (2-d and 3-d) against
torch: window grids, ceil_mode, count_include_pad, divisor_override, ties, NaN, integers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run, run1, t

WINDOWS_3D = list(
    itertools.product(
        [(2, 2, 2), (3, 2, 3)],  # kernel
        [None, (1, 2, 1)],  # stride
        [(0, 0, 0), (1, 1, 1)],  # padding
        [False, True],  # ceil_mode
    )
)


@pytest.mark.parametrize(("k", "s", "p", "ceil"), WINDOWS_3D)
def test_3d_pools_match_torch(
    k: tuple[int, ...], s: tuple[int, ...] | None, p: tuple[int, ...], ceil: bool
) -> None:
    x = randn(2, 3, 5, 6, 7, seed=1)
    attrs = {"kernel": k, "stride": s, "padding": p, "ceil_mode": ceil}
    close(run1("max_pool3d", [x], attrs), F.max_pool3d(t(x), k, s, p, ceil_mode=ceil))
    for cip in (True, False):
        want = F.avg_pool3d(t(x), k, s, p, ceil, cip)
        close(run1("avg_pool3d", [x], {**attrs, "count_include_pad": cip}), want)


def test_avg_pool3d_divisor_integers_and_unbatched() -> None:
    rng = np.random.default_rng(2)
    xi = rng.integers(-40, 40, (1, 2, 4, 4, 4))
    attrs = {"kernel": (2, 2, 2), "padding": (1, 0, 1)}
    close(run1("avg_pool3d", [xi], attrs), F.avg_pool3d(t(xi), 2, padding=(1, 0, 1)))
    x = randn(2, 4, 4, 4, seed=3)
    want = F.avg_pool3d(t(x), 2, divisor_override=3)
    close(run1("avg_pool3d", [x], {"kernel": (2, 2, 2), "divisor_override": 3}), want)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool_with_indices_matches_torch(nd: int, ceil: bool, dilation: int) -> None:
    x = randn(2, 2, *(7, 6, 5)[:nd], seed=nd)
    fn = F.max_pool2d if nd == 2 else F.max_pool3d
    want_v, want_i = fn(t(x), 3, 2, 1, dilation, ceil_mode=ceil, return_indices=True)
    attrs = {
        "kernel": (3,) * nd,
        "stride": (2,) * nd,
        "padding": (1,) * nd,
        "dilation": (dilation,) * nd,
        "ceil_mode": ceil,
    }
    values, indices = run("max_pool_with_indices", [x], attrs)
    close(values, want_v)
    np.testing.assert_array_equal(indices, want_i.numpy())


def test_max_pool_indices_ties_nan_and_integers() -> None:
    """Ties pick the first maximum in row-major window order; a NaN window picks its last NaN."""
    x = np.array([[[[1.0, 5.0, 5.0, 2.0], [5.0, np.nan, 0.0, np.nan]]]], dtype=np.float32)
    values, indices = run("max_pool_with_indices", [x], {"kernel": (2, 2)})
    want_v, want_i = F.max_pool2d(t(x), 2, return_indices=True)
    close(values, want_v)
    np.testing.assert_array_equal(indices, want_i.numpy())
    xi = np.full((1, 1, 3, 3), np.iinfo(np.int64).min, dtype=np.int64)
    values, indices = run("max_pool_with_indices", [xi], {"kernel": (2, 2), "padding": (1, 1)})
    want_v, want_i = F.max_pool2d(t(xi), 2, padding=1, return_indices=True)
    close(values, want_v)
    np.testing.assert_array_equal(indices, want_i.numpy())


@pytest.mark.parametrize("out", [(1, 1, 1), (2, 3, 4), (5, 7, 6)])
def test_adaptive_avg_pool3d(out: tuple[int, int, int]) -> None:
    x = randn(2, 3, 5, 7, 6, seed=5)
    x[0, 0, 0, 0, 0] = np.nan
    close(run1("adaptive_avg_pool3d", [x], {"output_size": out}), F.adaptive_avg_pool3d(t(x), out))
    close(
        run1("adaptive_avg_pool3d", [x[0]], {"output_size": out}),
        F.adaptive_avg_pool3d(t(x[0]), out),
    )


@pytest.mark.parametrize(
    ("op", "shape", "attrs", "match"),
    [
        ("max_pool3d", (1, 1, 4, 4, 4), {"kernel": (2, 2, 2), "padding": (2, 0, 0)}, "half"),
        ("max_pool3d", (1, 1, 4, 4), {"kernel": (2, 2)}, "kernel"),
        ("avg_pool3d", (1, 1, 1, 4, 4), {"kernel": (2, 2, 2)}, "does not fit"),
        ("max_pool_with_indices", (4,), {"kernel": (2, 2)}, "spatial"),
        ("adaptive_avg_pool3d", (1, 1, 4, 4, 4), {"output_size": (1, 1)}, "output sizes"),
    ],
)
def test_infer_errors(op: str, shape: tuple, attrs: dict, match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        get_op(op).infer_types([TensorType(shape)], attrs)
