"""Calibration observers on known data, degenerate data and bad data."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.ops.qarith import MIN_SCALE, QuantArithError, choose_qparams, dequantize, quantize
from cuvil_ref.quant.observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
    PercentileObserver,
    PerChannelMinMaxObserver,
)


def quant_mse(x: np.ndarray, scale: np.float32, zp: int) -> float:
    back = dequantize(quantize(x, scale, zp), scale, zp).astype(np.float64)
    return float(np.mean((back - x.astype(np.float64)) ** 2))


def test_minmax_tracks_extremes_across_batches() -> None:
    obs = MinMaxObserver()
    obs.update(np.array([0.5, -1.0, 0.25], np.float32))
    obs.update(np.array([[2.0, 0.0]], np.float32))
    obs.update(np.zeros((0,), np.float32))  # empty batches are ignored
    assert (obs.min_val, obs.max_val) == (-1.0, 2.0)
    scale, zp = obs.qparams()
    assert scale == np.float32(3.0 / 255) and zp == -128 + 85
    # -1 and 2 land on the grid ends
    assert quantize(np.array([-1.0, 2.0], np.float32), scale, zp).tolist() == [-128, 127]


def test_minmax_symmetric_and_positive_only() -> None:
    sym = MinMaxObserver(symmetric=True, qmin=-127, qmax=127)
    sym.update(np.array([-0.5, 3.0], np.float32))
    assert sym.qparams() == (np.float32(3.0 / 127), 0)
    pos = MinMaxObserver()
    pos.update(np.array([1.0, 2.0], np.float32))  # range widened down to 0
    assert pos.qparams() == choose_qparams(0.0, 2.0, False)
    assert pos.qparams()[1] == -128


def test_degenerate_all_zero_batch() -> None:
    obs = MinMaxObserver()
    obs.update(np.zeros(5, np.float32))
    scale, zp = obs.qparams()
    assert scale == np.float32(MIN_SCALE)
    assert quantize(np.zeros(3, np.float32), scale, zp).tolist() == [zp] * 3


def test_moving_average_follows_formula() -> None:
    obs = MovingAverageMinMaxObserver(averaging_constant=0.25)
    obs.update(np.array([-1.0, 1.0], np.float32))
    obs.update(np.array([-3.0, 5.0], np.float32))
    assert obs.min_val == pytest.approx(-1.0 + 0.25 * (-3.0 + 1.0))
    assert obs.max_val == pytest.approx(1.0 + 0.25 * (5.0 - 1.0))
    assert obs.qparams() == choose_qparams(obs.min_val, obs.max_val, False)
    with pytest.raises(QuantArithError, match="averaging_constant"):
        MovingAverageMinMaxObserver(averaging_constant=0.0)


def test_percentile_clips_outliers() -> None:
    x = np.linspace(-1.0, 1.0, 10001, dtype=np.float32)
    x[0], x[-1] = -1000.0, 1000.0
    obs = PercentileObserver(percentile=99.9)
    obs.update(x[:5000])
    obs.update(x[5000:])
    lo = float(np.percentile(x.astype(np.float64), 0.1))
    hi = float(np.percentile(x.astype(np.float64), 99.9))
    assert obs.qparams() == choose_qparams(lo, hi, False)
    assert float(obs.qparams()[0]) < 2.5 / 255  # far below the min-max scale 2000 / 255
    sym = PercentileObserver(percentile=99.9, symmetric=True)
    sym.update(x)
    assert sym.qparams()[1] == 0
    with pytest.raises(QuantArithError, match="percentile"):
        PercentileObserver(percentile=30.0)


def test_mse_observer_beats_minmax_on_outliers() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000).astype(np.float32)
    x[:3] = [12.0, -9.0, 15.0]
    mse_obs, mm_obs = MSEObserver(), MinMaxObserver()
    mse_obs.update(x)
    mm_obs.update(x)
    mse_q, mm_q = mse_obs.qparams(), mm_obs.qparams()
    assert quant_mse(x, *mse_q) < quant_mse(x, *mm_q)
    assert mse_q[0] < mm_q[0]  # it clipped the range


def test_mse_observer_keeps_full_range_for_uniform_data() -> None:
    x = np.linspace(-2.0, 2.0, 4097, dtype=np.float32)
    obs = MSEObserver(num_candidates=20)
    obs.update(x)
    scale, zp = obs.qparams()
    mm = choose_qparams(-2.0, 2.0, False)
    assert quant_mse(x, scale, zp) <= quant_mse(x, *mm)
    assert float(scale) >= 0.9 * float(mm[0])


def test_per_channel_weights() -> None:
    w = np.zeros((3, 2, 2), np.float32)
    w[0, 0, 0], w[1, 1, 1], w[2] = -0.5, 2.54, 0.0
    obs = PerChannelMinMaxObserver(axis=0)
    obs.update(w)
    scales, zps = obs.qparams()
    assert scales.dtype == np.float32 and zps.tolist() == [0, 0, 0]
    assert scales.tolist() == [np.float32(0.5 / 127), np.float32(2.54 / 127), np.float32(MIN_SCALE)]
    q = quantize(w, scales, zps, qmin=-127, qmax=127, axis=0)
    assert q[0, 0, 0] == -127 and q[1, 1, 1] == 127
    obs.update(np.full((3, 2, 2), 1.0, np.float32))  # running max per channel
    assert obs.qparams()[0].tolist()[0] == np.float32(1.0 / 127)
    with pytest.raises(QuantArithError, match="channels"):
        obs.update(np.ones((4, 2, 2), np.float32))


@pytest.mark.parametrize(
    "obs",
    [
        MinMaxObserver(),
        MovingAverageMinMaxObserver(),
        PercentileObserver(),
        MSEObserver(),
        PerChannelMinMaxObserver(),
    ],
    ids=lambda o: type(o).__name__,
)
def test_bad_data_names_the_observer(obs: MinMaxObserver) -> None:
    with pytest.raises(QuantArithError, match=f"{type(obs).__name__}.qparams: no calibration"):
        obs.qparams()
    with pytest.raises(ValueError, match=f"{type(obs).__name__}.update: .* NaN"):
        obs.update(np.array([[1.0, np.nan]], np.float32))
    with pytest.raises(ValueError, match=f"{type(obs).__name__}.update: .* inf"):
        obs.update(np.array([[1.0, np.inf]], np.float32))
