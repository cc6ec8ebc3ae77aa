"""The int8 arithmetic the kernels emit, evaluated in numpy int64, matches the quant spec.

The C expressions ``REQUANT_C`` and ``QADD_C`` are translated mechanically (casts to ``np.int64``)
and evaluated on random and edge-case operands; the oracle is ``cuvil_ref.ops.qarith``.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_hip.kernels.epilogue import QADD_C, REQUANT_C
from cuvil_kernels_hip.kernels.qgemm import check_int32_accumulation, qconv2d_source, qgemm_source
from cuvil_kernels_hip.kernels.qpool import qpool_source
from cuvil_kernels_hip.kernels.quant_elementwise import quant_elementwise_source
from cuvil_kernels_hip.source import KernelOptions

from cuvil_ref.ops import qarith


def eval_c_int64(expr: str, **values: np.ndarray) -> np.ndarray:
    """Evaluate a C integer expression of casts, +, *, << and >> in numpy int64."""
    py = expr.replace("(long long)", "np.int64").replace("1LL", "np.int64(1)")
    env = {"np": np, **{k: np.asarray(v, dtype=np.int64) for k, v in values.items()}}
    return np.asarray(eval(py, env), dtype=np.int64)  # noqa: S307 - our own emitted text


def clamp_c(r: np.ndarray, qmin: int, qmax: int) -> np.ndarray:
    """cuvil_clamp_i8 in numpy."""
    return np.where(r < qmin, qmin, np.where(r > qmax, qmax, r)).astype(np.int8)


def _edge_accumulators(rng: np.random.Generator) -> np.ndarray:
    k_max = 65000 * 255 * 128
    edges = np.array([0, 1, -1, 2, -2, 3, -3, 2**31 - 1, -(2**31), k_max, -k_max], np.int64)
    return np.concatenate([edges, rng.integers(-(2**31), 2**31, 2000)])


@pytest.mark.parametrize("ratio", [1.0, 0.5, 0.75, 3.1e-3, 2.2e-6, 1.7, 123.25, 1e-18, 0.0])
def test_requant_expression_matches_spec_rescale(ratio: float) -> None:
    rng = np.random.default_rng(7)
    mult, shift = qarith.quantize_multiplier(ratio)
    acc = _edge_accumulators(rng)
    got = eval_c_int64(REQUANT_C, acc=acc, mult=mult, shift=shift)
    np.testing.assert_array_equal(got, qarith.rescale(acc, mult, shift))
    for out_zp, qmin, qmax in ((0, -128, 127), (-5, -5, 127), (17, 17, 60)):
        out = clamp_c(np.int64(out_zp) + got, qmin, qmax)
        expect = qarith.requantize_output(acc, mult, shift, out_zp, qmin, qmax)
        np.testing.assert_array_equal(out, expect)


def test_requant_rounds_halves_toward_plus_infinity() -> None:
    # M = 2**30, shift = 31 is x/2: -3/2 -> -1, 3/2 -> 2, -1/2 -> 0, 1/2 -> 1
    got = eval_c_int64(REQUANT_C, acc=np.array([-3, 3, -1, 1]), mult=2**30, shift=31)
    np.testing.assert_array_equal(got, [-1, 2, 0, 1])


def test_qadd_expression_matches_spec() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, 4000)
    b = rng.integers(-128, 128, 4000)
    for s_a, s_b, s_out, a_zp, b_zp, out_zp in (
        (0.02, 0.05, 0.07, 3, -10, 1),
        (0.5, 1e-4, 0.25, -128, 127, 0),
        (1.0, 1.0, 1.0, 0, 0, 0),
    ):
        (m_a, m_b), shift = qarith.shared_shift_multipliers(
            [
                float(np.float32(s_a)) / float(np.float32(s_out)),
                float(np.float32(s_b)) / float(np.float32(s_out)),
            ]
        )
        r = eval_c_int64(QADD_C, da=a - a_zp, db=b - b_zp, mult_a=m_a, mult_b=m_b, shift=shift)
        got = clamp_c(np.int64(out_zp) + r, -128, 127)
        expect = qarith.qadd_int(a, a_zp, b, b_zp, (m_a, m_b), shift, out_zp)
        np.testing.assert_array_equal(got, expect)


def test_quantize_emulation_matches_spec_including_specials() -> None:
    """Mirror of cuvil_quantize: fp32 divide, NaN -> zp, rintf, clip to +-1024, + zp, clamp."""
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            rng.normal(0, 3, 4000).astype(np.float32),
            np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1e30, -1e30, np.inf, -np.inf, np.nan], np.float32),
        ]
    )
    scale, zp = np.float32(0.02), 7
    t = x / scale  # float32 / float32: one IEEE division
    with np.errstate(invalid="ignore"):
        r = np.clip(np.rint(t), -1024, 1024)
    r = np.where(np.isnan(t), 0, r).astype(np.int64) + zp
    got = np.where(np.isnan(t), zp, np.clip(r, -128, 127)).astype(np.int8)
    np.testing.assert_array_equal(got, qarith.quantize(x, scale, zp))


def test_int8_kernels_emit_exactly_the_checked_expressions() -> None:
    opts = KernelOptions()
    for src in (
        qgemm_source(opts),
        qconv2d_source(opts),
        qpool_source("avg", opts),
        quant_elementwise_source("requantize", opts),
    ):
        assert REQUANT_C in src.code, src.family
        assert "cuvil_requant(" in src.code.split("cuvil_requant(long long acc", 1)[1]
    qadd = quant_elementwise_source("qadd", opts).code
    assert QADD_C in qadd and "cuvil_qadd((int)a[i] - a_zp" in qadd
    quant = quant_elementwise_source("quantize", opts).code
    assert "__fdiv_rn" in quant and "rintf(t)" in quant and "if (t != t) return" in quant


def test_int32_accumulation_bound_is_enforced() -> None:
    check_int32_accumulation(65000, 1000, "qlinear")
    with pytest.raises(ValueError, match="qlinear: int32 accumulation could overflow"):
        check_int32_accumulation(70000, 0, "qlinear")
