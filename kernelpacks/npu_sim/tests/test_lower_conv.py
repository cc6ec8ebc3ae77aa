"""qconv2d / qlinear / qmatmul lowerings are bit-exact against the spec reference, including
tiling corner cases (layers larger than every buffer, odd channels, 1x1/7x7, stride 2, dilation,
groups and depthwise) on npu-v3 and npu-v2."""

from __future__ import annotations

import numpy as np
import pytest
import spec_reference as ref
from cuvil_kernels_npu_sim import (
    config_from_dict,
    lower_qconv2d,
    lower_qlinear,
    lower_qmatmul,
    simulate,
)

TINY = config_from_dict(
    {
        "inp_bytes": 2048,
        "wgt_bytes": 2048,
        "acc_bytes": 4096,
        "tbl_bytes": 1024,
        "array_rows": 8,
        "array_cols": 8,
    }
)


def pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def _mults(rng: np.random.Generator, cout: int, k: int) -> tuple[list[int], list[int]]:
    pairs = [ref.quantize_multiplier(float(r)) for r in rng.uniform(0.3, 2.0, cout) / (8 * k**0.5)]
    return [m for m, _ in pairs], [s for _, s in pairs]


CONV_CASES = {
    # name: (x_shape, cout, kernel, stride, padding, dilation, groups, target)
    "3x3_pad1": ((1, 8, 9, 9), 16, (3, 3), 1, 1, 1, 1, "npu-v3"),
    "1x1_odd_channels": ((2, 5, 7, 6), 3, (1, 1), 1, 0, 1, 1, "npu-v3"),
    "7x7_stride2_pad3": ((1, 3, 20, 18), 10, (7, 7), 2, 3, 1, 1, "npu-v3"),
    "stride2_rect_kernel": ((1, 6, 11, 10), 7, (3, 2), (2, 1), (1, 0), 1, 1, "npu-v3"),
    "dilation2": ((1, 4, 12, 12), 6, (3, 3), 1, 2, 2, 1, "npu-v3"),
    "groups2": ((1, 8, 8, 8), 12, (3, 3), 1, 1, 1, 2, "npu-v3"),
    "depthwise": ((1, 40, 9, 9), 40, (3, 3), 2, 1, 1, 40, "npu-v3"),
    "depthwise_mult2": ((1, 6, 7, 7), 12, (3, 3), 1, 1, 1, 6, "npu-v3"),
    "larger_than_every_buffer": ((2, 40, 14, 13), 37, (3, 3), 1, 1, 1, 1, TINY),
    "npu_v2": ((1, 20, 12, 12), 24, (3, 3), 2, 1, 1, 1, "npu-v2"),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_qconv2d_bit_exact(case: str, rng: np.random.Generator) -> None:
    x_shape, cout, (kh, kw), stride, pad, dil, groups, target = CONV_CASES[case]
    cin = x_shape[1]
    x = rng.integers(-128, 128, x_shape, dtype=np.int8)
    w = rng.integers(-127, 128, (cout, cin // groups, kh, kw), dtype=np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    mult, shift = _mults(rng, cout, cin // groups * kh * kw)
    prog = lower_qconv2d(
        x_shape,
        w,
        bias,
        mult,
        shift,
        x_zp=-7,
        out_zp=5,
        stride=stride,
        padding=pad,
        dilation=dil,
        groups=groups,
        target=target,
    )
    got = simulate(prog, {"x": x}).outputs["y"]
    want = ref.qconv2d(
        x,
        w,
        bias,
        mult,
        shift,
        -7,
        5,
        stride=pair(stride),
        padding=pair(pad),
        dilation=pair(dil),
        groups=groups,
    )
    assert got.shape == want.shape
    assert np.array_equal(got, want)
    assert len(np.unique(want)) > 10  # the case exercises more than saturation


def test_larger_than_every_buffer_is_tiled_on_all_axes() -> None:
    x_shape, cout = CONV_CASES["larger_than_every_buffer"][:2]
    w = np.ones((cout, x_shape[1], 3, 3), np.int8)
    prog = lower_qconv2d(x_shape, w, None, 1 << 30, 40, x_zp=0, out_zp=0, padding=1, target=TINY)
    t = prog.info["tiling"]
    assert t.ci_t < x_shape[1] and t.co_t < cout and t.oh_t < x_shape[2]
    assert TINY.inp_bytes < 40 * 14 * 13 and cout * 40 * 9 > TINY.wgt_bytes


def test_fused_relu6_clamp(rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, (1, 4, 6, 6), dtype=np.int8)
    w = rng.integers(-127, 128, (8, 4, 3, 3), dtype=np.int8)
    mult, shift = _mults(rng, 8, 36)
    prog = lower_qconv2d(
        x.shape, w, None, mult, shift, x_zp=3, out_zp=-10, qmin=-10, qmax=40, padding=1
    )
    got = simulate(prog, {"x": x}).outputs["y"]
    want = ref.qconv2d(x, w, None, mult, shift, 3, -10, qmin=-10, qmax=40, padding=(1, 1))
    assert np.array_equal(got, want) and got.min() == -10 and got.max() == 40


@pytest.mark.parametrize("shape,n_out,target", [((5, 70), 33, "npu-v3"), ((3, 2, 300), 40, TINY)])
def test_qlinear_bit_exact(shape, n_out, target, rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    w = rng.integers(-127, 128, (n_out, shape[-1]), dtype=np.int8)
    bias = rng.integers(-3000, 3000, n_out).astype(np.int32)
    mult, shift = _mults(rng, n_out, shape[-1])
    prog = lower_qlinear(shape, w, bias, mult, shift, x_zp=4, out_zp=-3, target=target)
    got = simulate(prog, {"x": x}).outputs["y"]
    assert np.array_equal(got, ref.qlinear(x, w, bias, np.array(mult), np.array(shift), 4, -3))


@pytest.mark.parametrize(
    "a_shape,b_shape,target", [((9, 40), (40, 21), "npu-v3"), ((2, 6, 50), (2, 50, 19), TINY)]
)
def test_qmatmul_bit_exact(a_shape, b_shape, target, rng: np.random.Generator) -> None:
    a = rng.integers(-128, 128, a_shape, dtype=np.int8)
    b = rng.integers(-128, 128, b_shape, dtype=np.int8)
    mult, shift = ref.quantize_multiplier(1 / (300 * a_shape[-1] ** 0.5))
    prog = lower_qmatmul(a_shape, b_shape, mult, shift, a_zp=-20, b_zp=11, out_zp=2, target=target)
    got = simulate(prog, {"a": a, "b": b}).outputs["y"]
    assert np.array_equal(got, ref.qmatmul(a, b, mult, shift, -20, 11, 2))


def test_accumulator_bound_is_checked_at_compile_time() -> None:
    w = np.ones((1, 70000), np.int8)
    with pytest.raises(ValueError, match="overflow the int32 accumulator"):
        lower_qlinear((1, 70000), w, None, 1, 1, x_zp=0, out_zp=0)


def test_bad_groups_named() -> None:
    with pytest.raises(ValueError, match="qconv2d.*groups=3"):
        lower_qconv2d(
            (1, 8, 4, 4), np.ones((4, 8, 1, 1), np.int8), None, 1, 1, x_zp=0, out_zp=0, groups=3
        )
