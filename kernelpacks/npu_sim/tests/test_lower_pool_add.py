"""Pool and residual-add lowerings are bit-exact against the spec reference."""

from __future__ import annotations

import numpy as np
import pytest
import spec_reference as ref
from cuvil_kernels_npu_sim import (
    avg_pool_counts,
    lower_qadaptive_avg_pool2d,
    lower_qadd,
    lower_qavg_pool2d,
    lower_qmax_pool2d,
    simulate,
)


@pytest.mark.parametrize(
    "shape,k,s,p,d",
    [
        ((1, 8, 13, 12), (3, 3), (2, 2), (1, 1), (1, 1)),
        ((2, 70, 9, 9), (2, 2), (2, 2), (0, 0), (1, 1)),
        ((1, 5, 12, 11), (3, 2), (1, 2), (1, 1), (2, 1)),
    ],
)
def test_qmax_pool2d(shape, k, s, p, d, rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    got = simulate(lower_qmax_pool2d(shape, k, s, p, d), {"x": x}).outputs["y"]
    assert np.array_equal(got, ref.qmax_pool2d(x, k, s, p, d))


def test_qmax_pool2d_padding_never_wins() -> None:
    x = np.full((1, 2, 4, 4), -128, np.int8)
    got = simulate(lower_qmax_pool2d(x.shape, 3, 2, 1), {"x": x}).outputs["y"]
    assert (got == -128).all()


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize(
    "shape,k,s,p",
    [((1, 6, 10, 9), (3, 3), (2, 2), (1, 1)), ((2, 40, 8, 8), (2, 3), (2, 1), (1, 1))],
)
def test_qavg_pool2d(shape, k, s, p, include_pad, rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    want, table = ref.qavg_pool2d(
        x, k, s, p, x_zp=9, s_in=0.05, s_out=0.03, out_zp=-4, count_include_pad=include_pad
    )
    assert sorted(table) == avg_pool_counts(shape, k, s, p, include_pad)
    prog = lower_qavg_pool2d(
        shape, k, s, p, x_zp=9, out_zp=-4, multipliers=table, count_include_pad=include_pad
    )
    assert np.array_equal(simulate(prog, {"x": x}).outputs["y"], want)


def test_qadaptive_avg_pool2d_global(rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, (2, 33, 7, 7), dtype=np.int8)
    want, table = ref.qavg_pool2d(
        x, (7, 7), (7, 7), (0, 0), x_zp=-3, s_in=0.1, s_out=0.02, out_zp=1
    )
    prog = lower_qadaptive_avg_pool2d(x.shape, 1, x_zp=-3, out_zp=1, multipliers=table)
    assert np.array_equal(simulate(prog, {"x": x}).outputs["y"], want)


def test_qadaptive_avg_pool2d_non_uniform_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="not a multiple"):
        lower_qadaptive_avg_pool2d((1, 1, 7, 7), 3, x_zp=0, out_zp=0, multipliers={})


@pytest.mark.parametrize("shape", [(1, 16, 5, 7), (3, 1000), (1, 64, 56, 56)])
def test_qadd_shared_shift(shape, rng: np.random.Generator) -> None:
    a = rng.integers(-128, 128, shape, dtype=np.int8)
    b = rng.integers(-128, 128, shape, dtype=np.int8)
    (m_a, m_b), shift = ref.shared_shift([0.04 / 0.05, 0.07 / 0.05])
    prog = lower_qadd(shape, a_zp=3, b_zp=-9, m_a=m_a, m_b=m_b, shift=shift, out_zp=-1, qmin=-1)
    got = simulate(prog, {"a": a, "b": b}).outputs["y"]
    assert np.array_equal(got, ref.qadd(a, b, m_a, m_b, shift, 3, -9, -1, qmin=-1))
