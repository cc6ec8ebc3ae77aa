"""The special-function unit's lowerings (qsoftmax, qlayer_norm, qlut) are bit-exact against
the registry's reference semantics, in timed and random (hazard-checked) schedules, and cost
what sfu.py documents."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_npu_sim import NPU_V3, simulate
from cuvil_kernels_npu_sim.lower_sfu import lower_qlayer_norm, lower_qlut, lower_qsoftmax

from cuvil_ref.ops import get_op
from cuvil_ref.ops.qtransformer import exp_table, layer_norm_params, lut_table


def _reference(op: str, x: np.ndarray, attrs: dict) -> np.ndarray:
    opdef = get_op(op)
    return opdef.evaluate([x], opdef.normalize_attrs(attrs))[0]


@pytest.mark.parametrize("mode", ["timed", "random"])
@pytest.mark.parametrize("shape,scale", [((4, 16), 0.05), ((3, 200, 128), 0.1), ((2, 5), 2.0)])
def test_qsoftmax(shape, scale, mode, rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    table = exp_table(scale)
    res = simulate(lower_qsoftmax(shape, table), {"x": x}, mode=mode)
    assert np.array_equal(res.outputs["y"], _reference("qsoftmax", x, {"table": table}))


@pytest.mark.parametrize("mode", ["timed", "random"])
@pytest.mark.parametrize("shape", [(4, 32), (2, 300, 256), (3, 7)])
def test_qlayer_norm(shape, mode, rng: np.random.Generator) -> None:
    n = shape[-1]
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    x[0, ...] = 9  # a constant row: zero variance, eps_q keeps the root positive
    gamma = rng.standard_normal(n).astype(np.float32)
    gamma[0] = 0.0
    beta = rng.standard_normal(n).astype(np.float32)
    params = layer_norm_params(gamma, beta, 1e-5, 0.05, 0.04, n)
    attrs = {"x_zp": -3, **params, "out_zp": 2, "qmin": -100, "qmax": 120}
    res = simulate(lower_qlayer_norm(shape, **attrs), {"x": x}, mode=mode)
    want = _reference("qlayer_norm", x, {**attrs, "out_scale": 0.04})
    assert np.array_equal(res.outputs["y"], want)


@pytest.mark.parametrize("shape", [(5, 1000), (7,), (2, 3, 256)])
def test_qlut_gelu(shape, rng: np.random.Generator) -> None:
    gelu = get_op("gelu")
    attrs = gelu.normalize_attrs({})
    table = lut_table(lambda v: gelu.evaluate([v], attrs)[0], 0.05, 3, 0.03, -20)
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    res = simulate(lower_qlut(shape, table, qmin=-20), {"x": x}, mode="random")
    want = _reference("qlut", x, {"table": table, "out_scale": 0.03, "out_zp": -20, "qmin": -20})
    assert np.array_equal(res.outputs["y"], want)


def test_sfu_cycles_follow_the_documented_cost(rng: np.random.Generator) -> None:
    """One piece of 64 rows x 128: three passes of ceil(128 / 32) cycles per row, one divide
    per row spread over the 32 lanes, then the ALU latency."""
    cfg = NPU_V3
    x = rng.integers(-128, 128, (64, 128), dtype=np.int8)
    res = simulate(lower_qsoftmax(x.shape, exp_table(0.1)), {"x": x})
    lanes = cfg.alu_lanes
    want = 64 * 3 * (128 // lanes) + (64 // lanes) * cfg.sfu_div_cycles + cfg.alu_latency
    assert res.stats.alu_cycles == want
    assert res.stats.macs == 0 and res.stats.alu_muls == x.size


def test_limits_are_named() -> None:
    with pytest.raises(ValueError, match="last axis"):
        lower_qsoftmax((4, 8), exp_table(0.1), axis=0)
    params = layer_norm_params(np.ones(1100), np.zeros(1100), 1e-5, 0.05, 0.05, 1100)
    with pytest.raises(ValueError, match="table words"):
        lower_qlayer_norm((2, 1100), x_zp=0, out_zp=0, **params)
    with pytest.raises(ValueError, match="table needs 256"):
        lower_qlut((4,), (0,) * 255)
