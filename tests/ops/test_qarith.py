"""The integer quant arithmetic against arbitrary-precision references (Python ints, Fraction)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_ref.ops.qarith import (
    MIN_SCALE,
    QuantArithError,
    check_accumulator_bound,
    choose_qparams,
    dequantize,
    qadd_int,
    qmul_int,
    quantize,
    quantize_multiplier,
    quantize_multipliers,
    relu_bounds,
    requantize_output,
    rescale,
    shared_shift_multipliers,
)

# Per-test settings (not a global profile, so other test modules keep their own).
EXACT = settings(deadline=None, max_examples=150)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT8 = st.integers(-128, 127)
MULT = st.integers(0, 2**31 - 1)
SHIFT = st.integers(1, 62)
RATIO = st.floats(min_value=0.0, max_value=2.0**29, allow_nan=False, allow_infinity=False)
SCALE32 = st.floats(min_value=2.0**-20, max_value=1024.0, width=32)
FLOAT32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


# --- arbitrary-precision references --------------------------------------------------------------


def ref_round_half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))


def ref_rescale(acc: int, mult: int, shift: int) -> int:
    """The spec's rounding, stated on exact rationals: round half up of acc * M / 2**shift."""
    return ref_round_half_up(Fraction(acc * mult, 2**shift))


def clamp(v: int, lo: int, hi: int) -> int:
    return min(max(v, lo), hi)


F32_OVERFLOW = Fraction(2**128 - 2**103)  # values this large round to inf in float32


def f32_round(x: Fraction) -> np.float32:
    """``x`` correctly rounded to float32 (nearest, ties to even mantissa)."""
    if abs(x) >= F32_OVERFLOW:
        return np.float32(math.copysign(math.inf, x))
    guess = np.float32(float(x))  # may be off by one ulp (double rounding), so check neighbours
    cands = [
        guess,
        np.nextafter(guess, np.float32(np.inf)),
        np.nextafter(guess, np.float32(-np.inf)),
    ]
    cands = [c for c in cands if np.isfinite(c)]

    def key(c: np.float32) -> tuple[Fraction, int]:
        return abs(Fraction(float(c)) - x), int(c.view(np.uint32)) & 1

    return min(cands, key=key)


def ref_quantize(x: float, scale: float, zp: int, qmin: int = -128, qmax: int = 127) -> int:
    t = f32_round(Fraction(float(np.float32(x))) / Fraction(float(np.float32(scale))))
    if np.isinf(t):
        return qmax if t > 0 else qmin
    return clamp(round(Fraction(float(t))) + zp, qmin, qmax)  # round(Fraction) is half-even


# --- quantize_multiplier -------------------------------------------------------------------------


@EXACT
@given(RATIO.filter(lambda r: r > 0))
def test_quantize_multiplier_is_nearest_fixed_point(ratio: float) -> None:
    mult, shift = quantize_multiplier(ratio)
    assert 1 <= shift <= 62
    exact = Fraction(ratio) * 2**shift
    if shift < 62:
        assert 2**30 <= mult < 2**31  # normalized
        assert abs(mult - exact) <= Fraction(1, 2)
        if abs(mult - exact) == Fraction(1, 2):
            assert mult % 2 == 0  # half-even
    else:  # capped: M was shifted right (truncated) by k >= 0 extra bits
        assert exact - Fraction(3, 2) < mult <= exact + Fraction(1, 2)
        assert 0 <= mult < 2**31


def test_quantize_multiplier_edges() -> None:
    assert quantize_multiplier(1.0) == (2**30, 30)
    assert quantize_multiplier(0.0) == (0, 1)
    assert quantize_multiplier(0.5) == (2**30, 31)
    # tiny ratios: shift capped at 62, M truncated (down to 0 for sub-2**-63 ratios)
    assert quantize_multiplier(2.0**-40) == (2**22, 62)
    assert quantize_multiplier(1e-30) == (0, 62)
    assert quantize_multiplier(5e-324) == (0, 62)
    # largest supported ratios: shift 1; a mantissa rounding up to 2**31 pushes it to shift 0
    assert quantize_multiplier(0.75 * 2**30) == (3 * 2**29, 1)
    with pytest.raises(QuantArithError, match="2\\*\\*30"):
        quantize_multiplier(2.0**30 * (1 - 2.0**-40))
    with pytest.raises(QuantArithError, match="2\\*\\*30"):
        quantize_multiplier(2.0**30)


@pytest.mark.parametrize("n", [2**30, 2**30 + 1, 2**31 - 2, 1_500_000_001])
def test_quantize_multiplier_ties_round_half_even(n: int) -> None:
    ratio = (2 * n + 1) / 2**32  # exact in float64: m * 2**31 = n + 1/2, a tie
    mult, shift = quantize_multiplier(ratio * 2.0**-5)
    assert shift == 36
    assert mult == (n if n % 2 == 0 else n + 1)


def test_quantize_multiplier_renormalizes_when_mantissa_rounds_up() -> None:
    ratio = 1.0 - 2.0**-40  # m * 2**31 rounds to 2**31
    assert quantize_multiplier(ratio) == (2**30, 30)


@pytest.mark.parametrize("bad", [-1e-3, math.nan, math.inf, -math.inf])
def test_quantize_multiplier_rejects(bad: float) -> None:
    with pytest.raises(ValueError, match="quantize_multiplier"):
        quantize_multiplier(bad)


def test_quantize_multipliers_per_channel() -> None:
    ratios = [0.5, 0.3, 0.0, 1e-25]
    mults, shifts = quantize_multipliers(ratios)
    assert mults.dtype == np.int64 and shifts.dtype == np.int64
    assert [(int(m), int(s)) for m, s in zip(mults, shifts)] == [
        quantize_multiplier(r) for r in ratios
    ]


# --- rescale / requantize ------------------------------------------------------------------------


@EXACT
@given(st.lists(INT32, min_size=1, max_size=16), MULT, SHIFT)
def test_rescale_matches_python_int_formula(accs: list[int], mult: int, shift: int) -> None:
    got = rescale(np.array(accs, dtype=np.int32), mult, shift)
    assert got.dtype == np.int64
    assert got.tolist() == [ref_rescale(a, mult, shift) for a in accs]


def test_rescale_extremes_do_not_overflow_int64() -> None:
    accs = np.array([-(2**31), 2**31 - 1, -1, 0, 1], dtype=np.int64)
    for shift in (1, 31, 62):
        got = rescale(accs, 2**31 - 1, shift)
        assert got.tolist() == [ref_rescale(int(a), 2**31 - 1, shift) for a in accs]


def test_rescale_halves_round_toward_plus_inf() -> None:
    # M / 2**shift = 1/2: acc * 0.5 lands on halves for odd acc
    got = rescale(np.array([5, -5, 7, -7, 1, -1]), 2**30, 31)
    assert got.tolist() == [3, -2, 4, -3, 1, 0]


@EXACT
@given(RATIO, st.lists(st.integers(-(2**20), 2**20), min_size=1, max_size=8))
def test_rescale_tracks_real_ratio(ratio: float, accs: list[int]) -> None:
    mult, shift = quantize_multiplier(ratio)
    got = rescale(np.array(accs), mult, shift)
    for a, g in zip(accs, got.tolist()):
        # one rounding of the fixed-point product plus the multiplier's own error
        bound = Fraction(1, 2) + abs(a) * abs(Fraction(mult, 2**shift) - Fraction(ratio))
        assert abs(g - Fraction(ratio) * a) <= bound
        if shift < 62:
            assert abs(Fraction(mult, 2**shift) - Fraction(ratio)) <= Fraction(1, 2 ** (shift + 1))


@EXACT
@given(st.lists(INT32, min_size=1, max_size=16))
def test_ratio_one_is_identity(accs: list[int]) -> None:
    mult, shift = quantize_multiplier(1.0)
    assert rescale(np.array(accs), mult, shift).tolist() == accs


def test_rescale_per_channel_axis() -> None:
    rng = np.random.default_rng(0)
    acc = rng.integers(-(2**31), 2**31, size=(2, 3, 4), dtype=np.int64)
    mults, shifts = quantize_multipliers([0.1, 0.002, 3.5])
    got = rescale(acc, mults, shifts, axis=1)
    for c in range(3):
        expect = [ref_rescale(int(a), int(mults[c]), int(shifts[c])) for a in acc[:, c].ravel()]
        assert got[:, c].ravel().tolist() == expect
    with pytest.raises(QuantArithError, match="per-channel multiplier"):
        rescale(acc, mults, shifts, axis=2)


@pytest.mark.parametrize(
    ("acc", "mult", "shift", "match"),
    [
        ([2**31], 1, 1, "acc"),
        ([0], 2**31, 1, "multiplier"),
        ([0], -1, 1, "multiplier"),
        ([0], 1, 0, "shift"),
        ([0], 1, 63, "shift"),
        (np.array([0.5]), 1, 1, "integer"),
    ],
)
def test_rescale_rejects_out_of_spec(acc: object, mult: int, shift: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rescale(acc, mult, shift)


@EXACT
@given(st.lists(INT32, min_size=1, max_size=16), MULT, SHIFT, INT8)
def test_requantize_output_matches_reference(
    accs: list[int], mult: int, shift: int, zp: int
) -> None:
    got = requantize_output(np.array(accs), mult, shift, zp)
    assert got.dtype == np.int8
    assert got.tolist() == [clamp(zp + ref_rescale(a, mult, shift), -128, 127) for a in accs]


def test_requantize_output_saturates_and_fused_relu() -> None:
    acc = np.array([-(2**31), -1000, 0, 1000, 2**31 - 1])
    mult, shift = quantize_multiplier(1.0)
    assert requantize_output(acc, mult, shift, 5).tolist() == [-128, -128, 5, 127, 127]
    lo, hi = relu_bounds("relu", 0.1, 5)
    assert requantize_output(acc, mult, shift, 5, lo, hi).tolist() == [5, 5, 5, 127, 127]
    with pytest.raises(QuantArithError, match="qmin <= qmax"):
        requantize_output(acc, mult, shift, 0, qmin=10, qmax=0)


def test_relu_bounds() -> None:
    assert relu_bounds(None, 0.1, 3) == (-128, 127)
    assert relu_bounds("relu", 0.1, -20) == (-20, 127)
    assert relu_bounds("relu6", 0.06, -20) == (-20, -20 + round(6 / float(np.float32(0.06))))
    assert relu_bounds("relu6", 0.01, 0) == (0, 127)  # 600 steps saturate
    assert relu_bounds("relu6", 12.0, 0) == (0, 0)  # 6 / 12 = 0.5 rounds half to even: 0
    assert relu_bounds("relu6", 4.0, 0) == (0, 2)  # 1.5 -> 2
    with pytest.raises(QuantArithError, match="gelu"):
        relu_bounds("gelu", 0.1, 0)


# --- qadd / qmul ---------------------------------------------------------------------------------


@EXACT
@given(
    st.lists(st.tuples(INT8, INT8), min_size=1, max_size=8),
    INT8,
    INT8,
    INT8,
    st.floats(1e-4, 10.0),
    st.floats(1e-4, 10.0),
    st.floats(1e-4, 10.0),
)
def test_qadd_matches_exact_reference(
    pairs: list[tuple[int, int]], a_zp: int, b_zp: int, out_zp: int, sa: float, sb: float, so: float
) -> None:
    s_a, s_b, s_o = (float(np.float32(s)) for s in (sa, sb, so))
    r_a, r_b = s_a / s_o, s_b / s_o
    mults, shift = shared_shift_multipliers([r_a, r_b])
    assert shift == min(30 - max(math.frexp(r_a)[1], math.frexp(r_b)[1]), 62)
    for m, r in zip(mults, (r_a, r_b)):
        assert 0 <= m <= 2**30 and abs(m - Fraction(r) * 2**shift) <= Fraction(1, 2)
    a = np.array([p[0] for p in pairs], dtype=np.int8)
    b = np.array([p[1] for p in pairs], dtype=np.int8)
    got = qadd_int(a, a_zp, b, b_zp, mults, shift, out_zp)
    assert got.dtype == np.int8
    for (x, y), g in zip(pairs, got.tolist()):
        da, db = x - a_zp, y - b_zp
        acc = Fraction(da * mults[0] + db * mults[1], 2**shift)
        assert g == clamp(out_zp + ref_round_half_up(acc), -128, 127)
        real = da * Fraction(r_a) + db * Fraction(r_b)
        if -128 < g < 127:  # unsaturated: one rounding plus the multipliers' error
            bound = Fraction(1, 2) + (abs(da) + abs(db)) * Fraction(1, 2 ** (shift + 1))
            assert abs(g - out_zp - real) <= bound


def test_qadd_worked_example_and_broadcast() -> None:
    # s_a = 0.5, s_b = 0.25, s_out = 1: ratios 0.5 and 0.25, e = 0, shift 30
    mults, shift = shared_shift_multipliers([0.5, 0.25])
    assert (mults, shift) == ((2**29, 2**28), 30)
    got = qadd_int(np.array([[3], [-3]], np.int8), 0, np.array([2, 6], np.int8), 0, mults, shift, 1)
    # 3*0.5 + 2*0.25 = 2 -> 3; 3*0.5 + 6*0.25 = 3 -> 4; -1.5 + 0.5 = -1 -> 0; -1.5 + 1.5 = 0 -> 1
    assert got.tolist() == [[3, 4], [0, 1]]


def test_shared_shift_edges() -> None:
    assert shared_shift_multipliers([0.0, 0.0]) == ((0, 0), 1)
    assert shared_shift_multipliers([1e-30, 0.0])[1] == 62
    assert shared_shift_multipliers([1.0, 1.0]) == ((2**29, 2**29), 29)
    with pytest.raises(QuantArithError, match="2\\*\\*29"):
        shared_shift_multipliers([2.0**29, 1.0])
    with pytest.raises(QuantArithError):
        shared_shift_multipliers([math.nan, 1.0])
    with pytest.raises(QuantArithError):
        shared_shift_multipliers([])


@EXACT
@given(st.lists(st.tuples(INT8, INT8), min_size=1, max_size=8), INT8, INT8, INT8, RATIO)
def test_qmul_matches_exact_reference(
    pairs: list[tuple[int, int]], a_zp: int, b_zp: int, out_zp: int, ratio: float
) -> None:
    mult, shift = quantize_multiplier(ratio)
    a = np.array([p[0] for p in pairs], dtype=np.int8)
    b = np.array([p[1] for p in pairs], dtype=np.int8)
    got = qmul_int(a, a_zp, b, b_zp, mult, shift, out_zp)
    expect = [
        clamp(out_zp + ref_rescale((x - a_zp) * (y - b_zp), mult, shift), -128, 127)
        for x, y in pairs
    ]
    assert got.tolist() == expect


# --- quantize / dequantize -----------------------------------------------------------------------


@EXACT
@given(st.lists(FLOAT32, min_size=1, max_size=8), SCALE32, INT8)
def test_quantize_matches_exact_reference(xs: list[float], scale: float, zp: int) -> None:
    got = quantize(np.array(xs, dtype=np.float32), scale, zp)
    assert got.dtype == np.int8
    assert got.tolist() == [ref_quantize(x, scale, zp) for x in xs]


def test_quantize_divides_never_multiplies_by_reciprocal() -> None:
    x, s = np.float32(17.25), np.float32(0.3)
    assert np.rint(x / s) != np.rint(x * (np.float32(1) / s))  # the two forms disagree here
    assert int(quantize(np.array([x]), s, 0)[0]) == ref_quantize(float(x), float(s), 0)


def test_quantize_special_values_and_rounding() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -0.5, -1.5, 1e30], dtype=np.float32)
    assert quantize(x, 1.0, 3).tolist() == [3, 127, -128, 3, 5, 5, 3, 1, 127]
    assert quantize(x, 1.0, -128, qmin=-128, qmax=0).tolist()[:3] == [-128, 0, -128]
    with pytest.raises(QuantArithError, match="scale"):
        quantize(x, 0.0, 0)
    with pytest.raises(QuantArithError, match="zero point"):
        quantize(x, 1.0, 200)


def test_quantize_per_channel() -> None:
    x = np.array([[0.5, -1.0, 2.0], [0.5, -1.0, 2.0]], dtype=np.float32)
    got = quantize(x, np.array([0.5, 0.25], np.float32), np.array([0, 1]), axis=0)
    assert got.tolist() == [[1, -2, 4], [3, -3, 9]]
    with pytest.raises(QuantArithError, match="per-channel scale"):
        quantize(x, np.array([0.5, 0.25, 1.0], np.float32), 0, axis=0)


@EXACT
@given(st.lists(INT8, min_size=1, max_size=8), SCALE32, INT8)
def test_dequantize_matches_exact_reference(qs: list[int], scale: float, zp: int) -> None:
    got = dequantize(np.array(qs, dtype=np.int8), scale, zp)
    assert got.dtype == np.float32
    s = Fraction(float(np.float32(scale)))
    assert got.tolist() == [float(f32_round((q - zp) * s)) for q in qs]


@EXACT
@given(st.lists(FLOAT32.filter(lambda v: abs(v) < 1e3), min_size=1, max_size=8), SCALE32, INT8)
def test_quantize_dequantize_round_trip_error(xs: list[float], scale: float, zp: int) -> None:
    s = float(np.float32(scale))
    q = quantize(np.array(xs, np.float32), s, zp)
    back = dequantize(q, s, zp)
    for x, qv, b in zip(xs, q.tolist(), back.tolist()):
        if -128 < qv < 127:  # inside the grid: at most half a step (plus float32 rounding)
            assert abs(b - float(np.float32(x))) <= s * 0.5 * (1 + 1e-5) + 1e-30


# --- choose_qparams / accumulator bound ----------------------------------------------------------


@EXACT
@given(FLOAT32.filter(lambda v: abs(v) < 1e30), FLOAT32.filter(lambda v: abs(v) < 1e30))
def test_choose_qparams_covers_range_and_zero(a: float, b: float) -> None:
    lo, hi = min(a, b), max(a, b)
    for sym in (False, True):
        scale, zp = choose_qparams(lo, hi, sym)
        assert isinstance(scale, np.float32) and scale >= np.float32(MIN_SCALE)
        assert -128 <= zp <= 127 and (zp == 0 or not sym)
        assert dequantize(np.array([zp]), scale, zp)[0] == 0.0  # zero is exact
        ends = np.array([min(lo, 0.0), max(hi, 0.0)], np.float32)
        back = dequantize(quantize(ends, scale, zp), scale, zp).astype(np.float64)
        assert np.all(np.abs(back - ends) <= float(scale) * 1.001 + 1e-30)


def test_choose_qparams_known_values_and_degenerate() -> None:
    assert choose_qparams(-1.0, 2.0, False) == (np.float32(3.0 / 255), -128 + round(255 / 3))
    assert choose_qparams(-1.0, 2.0, True, -127, 127) == (np.float32(2.0 / 127), 0)
    assert choose_qparams(0.0, 0.0, False) == (np.float32(MIN_SCALE), -128)
    assert choose_qparams(0.0, 0.0, True) == (np.float32(MIN_SCALE), 0)
    assert choose_qparams(1.0, 1.0, False)[1] == -128  # range widened to include 0
    for bad in ((math.nan, 1.0), (0.0, math.inf), (-math.inf, 0.0)):
        with pytest.raises(QuantArithError, match="not finite"):
            choose_qparams(*bad, symmetric=False)
    with pytest.raises(QuantArithError, match="min_val"):
        choose_qparams(2.0, 1.0, False)


def test_accumulator_bound_is_tight_and_sound() -> None:
    term = 255 * 128
    k_max = (2**31 - 1) // term
    check_accumulator_bound(65000)
    check_accumulator_bound(k_max)
    with pytest.raises(QuantArithError, match="K <= "):
        check_accumulator_bound(k_max + 1)
    with pytest.raises(QuantArithError, match="overflow"):
        check_accumulator_bound(k_max, max_abs_bias=term)
    with pytest.raises(QuantArithError):
        check_accumulator_bound(40000, two_activations=True)
    # worst case at k_max: x - x_zp = -255 (x=-128, zp=127) times w = -128 still fits in int32
    worst = k_max * ((-128 - 127) * -128)
    assert worst <= 2**31 - 1
    acc = np.sum(np.full(k_max, -255, np.int64) * np.full(k_max, -128, np.int64))
    assert int(acc) == worst
    assert rescale(np.array([acc]), 2**30, 30).tolist() == [worst]


def test_docs_semantics_worked_examples() -> None:
    """The numbers printed in docs/semantics.md sections 3, 5 and 7 (keep them in sync)."""
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    ratio = f32(0.02) * f32(0.005) / f32(0.1)
    mult, shift = quantize_multiplier(ratio)
    assert (mult, shift) == (1099511562, 40)
    assert 12345 * mult + 2**39 == 14123226046778
    assert requantize_output(np.array([12345, -12345]), mult, shift, -5).tolist() == [7, -17]
    # double rounding (gemmlowp style) would give -20 here: exact value is just above -19.5
    assert Fraction(ratio) * -19500 > Fraction(-39, 2)
    assert rescale(np.array([-19500]), mult, shift).tolist() == [-19]
    mults, qshift = shared_shift_multipliers([f32(0.05) / f32(0.12), f32(0.1) / f32(0.12)])
    assert (mults, qshift) == ((447392443, 894784887), 30)
    assert 103 * mults[0] - 24 * mults[1] == 24606584341
    assert qadd_int(np.array([100]), -3, np.array([-20]), 4, mults, qshift, 2).tolist() == [25]
    assert quantize(np.array([17.25], np.float32), np.float32(0.3), 0).tolist() == [57]


def test_qmul_and_qadd_reject_out_of_spec_operands() -> None:
    big = np.array([2**31 - 1], np.int64)
    with pytest.raises(QuantArithError, match="acc"):  # product leaves int32: never wraps
        qmul_int(big, 0, big, 0, 1, 1, 0)
    with pytest.raises(QuantArithError, match="zero point"):
        qmul_int(big, 2**40, big, 0, 1, 1, 0)
    with pytest.raises(QuantArithError, match="a - a_zp"):
        qadd_int(big, -128, np.array([0]), 0, (1, 1), 1, 0)
    with pytest.raises(QuantArithError, match="two multipliers"):
        qadd_int(np.array([0]), 0, np.array([0]), 0, (1,), 1, 0)
