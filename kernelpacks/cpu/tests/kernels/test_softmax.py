"""softmax and log_softmax over the last axis (rows, with the attention scale and mask folded
in) and over a middle axis."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import softmax

NOMASK = np.ones((1, 1), np.bool_)
NEG_INF = np.array([-np.inf], np.float32)


def _ref(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    x = x.astype(np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def _rows(x: np.ndarray, log: bool = False, mask: np.ndarray | None = None,
          fill: np.ndarray = NEG_INF, scale: float = 1.0, scale_op: int = softmax.SCALE_NONE,
          keep: bool = True) -> np.ndarray:  # fmt: skip
    out = np.empty_like(x)
    table = np.ones((1, x.shape[1]), np.bool_) if mask is None else mask
    softmax.softmax_scores(x, table, fill, out, np.float32(scale), scale_op, keep,
                           mask is not None, log, np.zeros(1, np.int64))  # fmt: skip
    return out


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", [1, 5, 16, 37, 130])
def test_rows_match_float64(log: bool, n: int, rng: np.random.Generator) -> None:
    x = (rng.standard_normal((70, n)) * 4).astype(np.float32)  # rows span several work items
    np.testing.assert_allclose(_rows(x, log), _ref(x, 1, log), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("log", [False, True])
def test_middle_axis_matches_float64(log: bool, rng: np.random.Generator) -> None:
    x = (rng.standard_normal((5, 37, 3)) * 4).astype(np.float32)
    out = np.empty_like(x)
    softmax.softmax(x, out, log, np.zeros(1, np.int64))
    np.testing.assert_allclose(out, _ref(x, 1, log), rtol=1e-5, atol=1e-6)


def test_rows_keep_the_interpreters_nan_and_infinity_meaning() -> None:
    x = np.zeros((6, 16), np.float32)
    x[0, 4] = np.nan
    x[1, :] = -np.inf
    x[2, 7] = np.float32(-np.nan)  # a NaN with the sign bit set sorts below -inf as a key
    x[3, 3] = np.float32(-0.0)
    x[4, :] = -3.0e38  # large negatives: the max is found exactly
    x[4, 9] = -2.0e38
    x[5, 2] = np.inf
    out = _rows(x)
    assert np.isnan(out[0]).all() and np.isnan(out[1]).all() and np.isnan(out[2]).all()
    np.testing.assert_allclose(out[3], 1 / 16)
    assert out[4, 9] == 1.0 and (np.delete(out[4], 9) == 0).all()
    assert np.isnan(out[5]).all()  # +inf - +inf: NaN, as the interpreter's max-subtract


@pytest.mark.parametrize(("scale_op", "keep"), [(softmax.SCALE_MUL, True),
                                                (softmax.SCALE_DIV, False)])  # fmt: skip
def test_scale_and_mask_fold_bit_identically(scale_op: int, keep: bool,
                                             rng: np.random.Generator) -> None:  # fmt: skip
    """The folded step equals the pointwise steps it replaces (numpy's float32 multiply or
    divide, then where) followed by the plain softmax, bit for bit."""
    x = (rng.standard_normal((2 * 3 * 9, 9)) * 5).astype(np.float32)
    cond = rng.random((9, 9)) < 0.7
    fill = np.array([-1.0e4], np.float32)
    s = np.float32(0.35355339)
    scaled = x * s if scale_op == softmax.SCALE_MUL else x / s
    table = np.tile(cond, (6, 1))  # the mask repeats every 9 rows
    masked = np.where(table == keep, scaled, fill[0]).astype(np.float32)
    got = _rows(x, mask=cond, fill=fill, scale=float(s), scale_op=scale_op, keep=keep)
    np.testing.assert_array_equal(got, _rows(masked))
