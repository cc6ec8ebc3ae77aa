"""int8 kernels bit-exact against ``cuvil_ref.ops.qarith`` (the pinned spec's implementation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import quant, quant_pool

from cuvil_ref.ops import qarith


def _q(
    rng: np.random.Generator, shape: tuple[int, ...], lo: int = -128, hi: int = 127
) -> np.ndarray:
    return rng.integers(lo, hi + 1, shape).astype(np.int8)


def test_quantize_rounds_half_even_and_saturates() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, np.nan, np.inf, -np.inf, 1e30, 0.7, -63.25],
                 np.float32)  # fmt: skip
    for scale, zp in ((1.0, 0), (0.5, 3), (np.float32(0.1), -7)):
        got = host(quant.quantize(x, scale, zp))
        np.testing.assert_array_equal(got, qarith.quantize(x, scale, zp))
    assert list(host(quant.quantize(x[:6], 1.0, 0))) == [0, 2, 2, 0, -2, -2]


def test_dequantize_and_requantize(rng: np.random.Generator) -> None:
    q = _q(rng, (3, 7))
    np.testing.assert_array_equal(host(quant.dequantize(q, 0.1, -3)), qarith.dequantize(q, 0.1, -3))
    m, s = qarith.quantize_multiplier(float(np.float32(0.1)) / float(np.float32(0.37)))
    want = qarith.requantize_output(q.astype(np.int64) + 3, m, s, 5)
    np.testing.assert_array_equal(host(quant.requantize(q, 0.1, -3, 0.37, 5)), want)


@pytest.mark.parametrize("activation", [None, "relu", "relu6"])
def test_qadd_shared_shift_broadcast(activation: str | None, rng: np.random.Generator) -> None:
    a, b = _q(rng, (4, 5)), _q(rng, (5,))
    sa, sb, so = np.float32(0.05), np.float32(0.031), np.float32(0.07)
    got = host(quant.qadd(a, sa, 3, b, sb, -9, so, -2, activation))
    ms, shift = qarith.shared_shift_multipliers([float(sa) / float(so), float(sb) / float(so)])
    qmin, qmax = qarith.relu_bounds(activation, so, -2)
    np.testing.assert_array_equal(got, qarith.qadd_int(a, 3, b, -9, ms, shift, -2, qmin, qmax))


def test_qmul(rng: np.random.Generator) -> None:
    a, b = _q(rng, (3, 4)), _q(rng, (3, 1))
    sa, sb, so = np.float32(0.02), np.float32(0.05), np.float32(0.01)
    m, s = qarith.quantize_multiplier(float(sa) * float(sb) / float(so))
    got = host(quant.qmul(a, sa, 1, b, sb, -4, so, 6))
    np.testing.assert_array_equal(got, qarith.qmul_int(a, 1, b, -4, m, s, 6))


def _channel_ref(acc: np.ndarray, ws: np.ndarray, s_in: float, s_out: float, zp: int,
                 activation: str | None, axis: int) -> np.ndarray:  # fmt: skip
    mults, shifts = qarith.quantize_multipliers(
        [float(np.float32(s_in)) * float(w) / float(np.float32(s_out)) for w in ws]
    )
    qmin, qmax = qarith.relu_bounds(activation, s_out, zp)
    return qarith.requantize_output(acc, mults, shifts, zp, qmin, qmax, axis=axis)


@pytest.mark.parametrize("activation", [None, "relu6"])
def test_qlinear_per_channel(activation: str | None, rng: np.random.Generator) -> None:
    x, w = _q(rng, (2, 3, 9)), _q(rng, (5, 9), -127, 127)
    bias = rng.integers(-3000, 3000, 5).astype(np.int32)
    ws = rng.uniform(0.001, 0.02, 5).astype(np.float32)
    got = host(quant.qlinear(x, 0.05, 4, w, ws, bias, 0.08, -3, activation))
    acc = (x.astype(np.int64) - 4) @ w.astype(np.int64).T + bias
    np.testing.assert_array_equal(got, _channel_ref(acc, ws, 0.05, 0.08, -3, activation, -1))


@pytest.mark.parametrize(("groups", "stride", "padding", "dilation"), [(1, 2, 1, 1), (4, 1, 2, 2)])
def test_qconv2d_padding_is_zero_point(groups: int, stride: int, padding: int, dilation: int,
                                       rng: np.random.Generator) -> None:  # fmt: skip
    x = _q(rng, (1, 4, 6, 5))
    w = _q(rng, (4, 4 // groups, 3, 3), -127, 127)
    bias = rng.integers(-500, 500, 4).astype(np.int32)
    ws = rng.uniform(0.001, 0.02, 4).astype(np.float32)
    got = host(quant.qconv2d(x, 0.05, 7, w, ws, bias, 0.3, 2, stride, padding, dilation, groups))
    xt, wt = torch.tensor(x.astype(np.float64) - 7), torch.tensor(w.astype(np.float64))
    bt = torch.tensor(bias.astype(np.float64))
    acc = F.conv2d(xt, wt, bt, stride, padding, dilation, groups)
    ref = _channel_ref(acc.numpy().astype(np.int64), ws, 0.05, 0.3, 2, None, 1)
    np.testing.assert_array_equal(got, ref)


def test_accumulator_bound_is_enforced() -> None:
    x, w = np.zeros((1, 70000), np.int8), np.zeros((1, 70000), np.int8)
    with pytest.raises(qarith.QuantArithError, match="overflow"):
        quant.qlinear(x, 0.1, 0, w, [0.1], None, 0.1, 0)


def test_qmax_pool2d_ignores_padding(rng: np.random.Generator) -> None:
    x = _q(rng, (1, 2, 5, 6), -128, -100)  # all negative: padding must never win
    got = host(quant_pool.qmax_pool2d(x, 3, 2, 1, ceil_mode=True))
    want = F.max_pool2d(torch.tensor(x.astype(np.float32)), 3, 2, 1, ceil_mode=True).numpy()
    np.testing.assert_array_equal(got, want.astype(np.int8))


def _requant_by_count(acc: np.ndarray, counts: np.ndarray, s_in: float, s_out: float,
                      out_zp: int) -> np.ndarray:  # fmt: skip
    out = np.empty(acc.shape, np.int8)
    for n in np.unique(counts):
        m, s = qarith.quantize_multiplier(float(np.float32(s_in)) / (float(np.float32(s_out)) * n))
        sel = counts == n
        out[sel] = qarith.requantize_output(acc[sel], m, s, out_zp)
    return out


@pytest.mark.parametrize("cip", [True, False])
def test_qavg_pool2d_varying_window(cip: bool, rng: np.random.Generator) -> None:
    x = _q(rng, (1, 2, 5, 6))
    got = host(quant_pool.qavg_pool2d(x, 0.05, 3, 0.04, -1, 3, 2, 1, True, cip))
    d = torch.tensor(x.astype(np.float64) - 3)
    ones = torch.ones_like(d)
    acc = np.rint(F.avg_pool2d(d, 3, 2, 1, True, cip, divisor_override=1).numpy()).astype(np.int64)
    # torch's divisor n per position: (count of valid ones) / (their average).
    valid = F.avg_pool2d(ones, 3, 2, 1, True, cip, divisor_override=1).numpy()
    counts = np.rint(valid / F.avg_pool2d(ones, 3, 2, 1, True, cip).numpy()).astype(np.int64)
    assert len(np.unique(counts)) > 1  # the window size really varies
    np.testing.assert_array_equal(got, _requant_by_count(acc, counts, 0.05, 0.04, -1))


def test_qadaptive_avg_pool2d(rng: np.random.Generator) -> None:
    x = _q(rng, (1, 2, 5, 7))
    got = host(quant_pool.qadaptive_avg_pool2d(x, 0.05, 3, 0.04, -1, (2, 3)))
    acc = np.zeros((1, 2, 2, 3), np.int64)
    counts = np.zeros_like(acc)
    for i in range(2):
        h0, h1 = (i * 5) // 2, -(-((i + 1) * 5) // 2)
        for j in range(3):
            w0, w1 = (j * 7) // 3, -(-((j + 1) * 7) // 3)
            win = x[:, :, h0:h1, w0:w1].astype(np.int64) - 3
            acc[:, :, i, j] = win.sum(axis=(2, 3))
            counts[:, :, i, j] = win.shape[2] * win.shape[3]
    np.testing.assert_array_equal(got, _requant_by_count(acc, counts, 0.05, 0.04, -1))
