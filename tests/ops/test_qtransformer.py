"""qsoftmax, qlayer_norm and qlut: the §11 worked example, closeness to the float ops they
replace, the exact integer square root, and errors that name the op."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op, qarith
from cuvil_ref.ops.qtransformer import exp_table, isqrt, layer_norm_params, lut_table


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


def run(op: str, x: np.ndarray, **attrs: object) -> np.ndarray:
    opdef = get_op(op)
    norm = opdef.normalize_attrs(attrs)
    opdef.infer_types([TensorType(x.shape, DType.i8)], norm)
    return opdef.evaluate([x], norm)[0]


def test_qsoftmax_worked_example() -> None:
    """docs/semantics.md §11: s_x = 0.05, row [10, 0] -> [31, -31]."""
    table = exp_table(0.05)
    assert table[255] == 2**15 and table[245] == 19875
    out = run("qsoftmax", np.array([[10, 0]], np.int8), table=table)
    assert out.tolist() == [[31, -31]]
    assert (2**44 // (32768 + 19875)) == 334179017


def test_qsoftmax_is_within_half_a_step_of_float_softmax(rng: np.random.Generator) -> None:
    scale, zp = np.float32(0.05), 3
    q = rng.integers(-128, 128, (6, 5, 40), dtype=np.int8)
    out = run("qsoftmax", q, table=exp_table(float(scale)))
    x = qarith.dequantize(q, scale, zp).astype(np.float64)
    want = np.exp(x - x.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    got = (out.astype(np.float64) + 128) / 256
    assert np.abs(got - want).max() <= 1 / 512 + 1e-3
    uniform = run("qsoftmax", np.full((1, 4), 7, np.int8), table=exp_table(0.1))
    assert uniform.tolist() == [[-64] * 4]  # 0.25 exactly


def test_qlayer_norm_matches_float_layer_norm(rng: np.random.Generator) -> None:
    n = 96
    x = (rng.standard_normal((7, n)) * 2 + 0.5).astype(np.float32)
    sx, zx = qarith.choose_qparams(float(x.min()), float(x.max()), False)
    q = qarith.quantize(x, sx, zx)
    gamma = rng.standard_normal(n).astype(np.float32)
    beta = (0.2 * rng.standard_normal(n)).astype(np.float32)
    xd = qarith.dequantize(q, sx, zx).astype(np.float64)
    want = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    want = want * gamma + beta
    so, zo = qarith.choose_qparams(float(want.min()), float(want.max()), False)
    params = layer_norm_params(gamma, beta, 1e-5, sx, so, n)
    out = run("qlayer_norm", q, x_zp=zx, out_scale=float(so), out_zp=zo, **params)
    err = np.abs(qarith.dequantize(out, so, zo) - want) / float(so)
    assert err.max() <= 1.0  # within one output step
    # a constant row has zero variance: only eps_q keeps the root positive, the output is beta
    flat = run("qlayer_norm", np.full((1, n), 5, np.int8), x_zp=zx, out_scale=float(so),
               out_zp=zo, **params)  # fmt: skip
    want_flat = np.clip(zo + np.asarray(params["beta_q"]), -128, 127)
    assert np.array_equal(flat[0], want_flat)


def test_qlut_is_quantize_of_f_of_dequantize() -> None:
    gelu = get_op("gelu")
    attrs = gelu.normalize_attrs({})
    table = lut_table(lambda v: gelu.evaluate([v], attrs)[0], 0.05, 3, 0.03, -20)
    x = np.arange(-128, 128, dtype=np.int8)
    out = run("qlut", x, table=table, fn="gelu", out_scale=0.03, out_zp=-20)
    deq = qarith.dequantize(x, np.float32(0.05), 3)
    want = qarith.quantize(gelu.evaluate([deq], attrs)[0], np.float32(0.03), -20)
    assert np.array_equal(out, want)


def test_isqrt_is_exact_near_squares() -> None:
    roots = np.array([0, 1, 2, 3, 46340, 2**31 - 1], np.int64)
    v = np.concatenate([roots * roots, roots * roots - 1, roots * roots + 1])
    v = np.maximum(v, 0)
    assert isqrt(v).tolist() == [math.isqrt(int(t)) for t in v]


def test_errors_name_the_op() -> None:
    with pytest.raises(ShapeError, match="qsoftmax.*table"):
        run("qsoftmax", np.zeros((2, 3), np.int8), table=(1,) * 256)
    with pytest.raises(ShapeError, match="qlayer_norm.*3 entries"):
        run("qlayer_norm", np.zeros((2, 3), np.int8), multiplier=(1,), shift=(1,), sign=(1,),
            beta_q=(0,), out_scale=0.1)  # fmt: skip
    with pytest.raises(ShapeError, match="qlut.*256"):
        run("qlut", np.zeros((2,), np.int8), table=(0,) * 10, out_scale=0.1)
