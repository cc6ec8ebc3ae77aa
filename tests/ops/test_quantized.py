"""Quantized ops against straightforward Python-int / numpy-int64 versions of docs/semantics.md.

Every comparison is bit-exact. The naive versions loop over output positions and use Python's
arbitrary-precision ints for the fixed-point rescale, so they share no code with the ops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_ref  # noqa: F401  (registers the ops)
from cuvil_ref.errors import QuantizationError, ShapeError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, GraphBuilder, TensorType
from cuvil_ref.ops import get_op
from cuvil_ref.ops.qarith import quantize_multiplier, shared_shift_multipliers

# --- naive spec ----------------------------------------------------------------------------------


def py_rescale(acc: int, m: int, s: int) -> int:
    return (acc * m + (1 << (s - 1))) >> s  # Python ints: exact, >> floors


def py_out(acc: int, m: int, s: int, zp: int, lo: int = -128, hi: int = 127) -> int:
    return min(max(zp + py_rescale(acc, m, s), lo), hi)


def run(op: str, arrays: list[np.ndarray], **attrs: object) -> np.ndarray:
    opdef = get_op(op)
    norm = opdef.normalize_attrs(attrs)
    types = [TensorType(a.shape, DType.from_numpy(a.dtype)) for a in arrays]
    (out_type,) = opdef.infer_types(types, norm)
    (y,) = opdef.evaluate(arrays, norm)
    assert y.dtype == out_type.dtype.numpy and y.shape == out_type.shape
    return y


def i8(rng: np.random.Generator, shape: tuple[int, ...], lo: int = -128) -> np.ndarray:
    return rng.integers(lo, 128, shape).astype(np.int8)


def multipliers(rng: np.random.Generator, n: int, lo: float = 1e-4, hi: float = 0.05):
    pairs = [quantize_multiplier(float(r)) for r in rng.uniform(lo, hi, n)]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def naive_conv(x, w, b, stride, pad, dil, groups, x_zp, mult, shift, zp, lo=-128, hi=127):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.full((n, c, h + pad[0] + pad[2], wd + pad[1] + pad[3]), x_zp, np.int64)
    xp[:, :, pad[0] : pad[0] + h, pad[1] : pad[1] + wd] = x
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.int8)
    og = o // groups
    for b_ in range(n):
        for oc in range(o):
            g = oc // og
            m, s = (mult[oc], shift[oc]) if len(mult) > 1 else (mult[0], shift[0])
            for p in range(oh):
                for q in range(ow):
                    rows = p * stride[0] + dil[0] * np.arange(kh)
                    cols = q * stride[1] + dil[1] * np.arange(kw)
                    win = xp[b_, g * cg : (g + 1) * cg][:, rows][:, :, cols] - x_zp
                    acc = int((win * w[oc].astype(np.int64)).sum()) + (
                        0 if b is None else int(b[oc])
                    )
                    out[b_, oc, p, q] = py_out(acc, m, s, zp, lo, hi)
    return out


# --- float boundary ------------------------------------------------------------------------------


def test_quantize_matches_spec_cases() -> None:
    x = np.array([17.25, 0.5 * 0.3, np.nan, np.inf, -np.inf, 1e6, -1e6, 0.0], np.float32)
    y = run("quantize", [x], scale=(0.3,), zero_point=(2,))
    scale = np.float32(0.3)
    want = [57 + 2, int(np.rint(np.float32(0.15) / scale)) + 2, 2, 127, -128, 127, -128, 2]
    assert y.tolist() == want


def test_quantize_per_channel_and_dequantize_roundtrip() -> None:
    x = np.array([[0.1, -0.2], [3.0, 4.0]], np.float32)
    q = run("quantize", [x], scale=(0.01, 0.1), zero_point=(0, 5), axis=0)
    assert q.tolist() == [[10, -20], [35, 45]]
    y = run("dequantize", [q], scale=(0.01, 0.1), zero_point=(0, 5), axis=0)
    want = (q.astype(np.int64) - np.array([[0], [5]])).astype(np.float32) * np.array(
        [[0.01], [0.1]], np.float32
    )
    assert y.dtype == np.float32 and np.array_equal(y, want)


def test_quantize_infer_attaches_quant_params() -> None:
    (t,) = get_op("quantize").infer_types(
        [TensorType(("batch", 4), DType.f32)], {"scale": (0.5,), "zero_point": (-3,)}
    )
    assert t.dtype == DType.i8 and t.shape == ("batch", 4)
    assert t.quant is not None and t.quant.scale == (0.5,) and t.quant.zero_point == (-3,)


# --- elementwise requantizing ops ----------------------------------------------------------------


def test_requantize_bit_exact_and_saturates() -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    m, s = quantize_multiplier(3.7)
    y = run("requantize", [x], x_zp=5, multiplier=(m,), shift=(s,), out_scale=1.0, out_zp=-7)
    assert y.tolist() == [py_out(int(v) - 5, m, s, -7) for v in x]
    assert y.min() == -128 and y.max() == 127  # ratio 3.7 saturates both ends


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.05, 4.0),
    st.floats(0.05, 4.0),
    st.integers(-128, 127),
    st.integers(-128, 127),
    st.integers(-128, 127),
)
def test_qadd_matches_shared_shift_rule(seed, ra, rb, a_zp, b_zp, out_zp) -> None:
    rng = np.random.default_rng(seed)
    a, b = i8(rng, (3, 4)), i8(rng, (1, 4))  # broadcasts
    (ma, mb), sh = shared_shift_multipliers([ra, rb])
    y = run(
        "qadd",
        [a, b],
        a_zp=a_zp,
        b_zp=b_zp,
        multiplier=(ma, mb),
        shift=(sh,),
        out_scale=0.1,
        out_zp=out_zp,
    )
    for i in range(3):
        for j in range(4):
            acc = (int(a[i, j]) - a_zp) * ma + (int(b[0, j]) - b_zp) * mb
            want = min(max(out_zp + ((acc + (1 << (sh - 1))) >> sh), -128), 127)
            assert y[i, j] == want


def test_qadd_worked_example_from_spec() -> None:
    (ma, mb), sh = shared_shift_multipliers(
        [
            float(np.float32(0.05)) / float(np.float32(0.12)),
            float(np.float32(0.1)) / float(np.float32(0.12)),
        ]
    )
    y = run(
        "qadd",
        [np.array([100], np.int8), np.array([-20], np.int8)],
        a_zp=-3,
        b_zp=4,
        multiplier=(ma, mb),
        shift=(sh,),
        out_scale=0.12,
        out_zp=2,
    )
    assert y.tolist() == [25]


def test_qmul_and_relu_clamp_bounds() -> None:
    rng = np.random.default_rng(1)
    a, b = i8(rng, (50,)), i8(rng, (50,))
    m, s = quantize_multiplier(0.01)
    y = run(
        "qmul",
        [a, b],
        a_zp=3,
        b_zp=-2,
        multiplier=(m,),
        shift=(s,),
        out_scale=0.1,
        out_zp=-10,
        qmin=-10,
        qmax=60,
    )
    want = [py_out((int(p) - 3) * (int(q) + 2), m, s, -10, -10, 60) for p, q in zip(a, b)]
    assert y.tolist() == want
    assert y.min() >= -10 and y.max() <= 60


def test_qconcat_requantizes_each_input() -> None:
    rng = np.random.default_rng(2)
    xs = [i8(rng, (2, c, 3)) for c in (1, 2, 3)]
    (m1, m2, m3), (s1, s2, s3) = zip(*(quantize_multiplier(r) for r in (1.0, 0.5, 2.0)))
    y = run(
        "qconcat",
        xs,
        axis=1,
        x_zp=(0, 4, -4),
        multiplier=(m1, m2, m3),
        shift=(s1, s2, s3),
        out_scale=0.1,
        out_zp=1,
    )
    assert y.shape == (2, 6, 3)
    parts = []
    for x, z, m, s in zip(xs, (0, 4, -4), (m1, m2, m3), (s1, s2, s3)):
        flat = [py_out(int(v) - z, m, s, 1) for v in x.ravel()]
        parts.append(np.array(flat, np.int8).reshape(x.shape))
    assert np.array_equal(y, np.concatenate(parts, axis=1))
    # ratio 1 with equal zero points is the identity
    same = run(
        "qconcat", xs[:1], axis=1, x_zp=(1,), multiplier=(m1,), shift=(s1,), out_scale=0.1, out_zp=1
    )
    assert np.array_equal(same, xs[0])


# --- accumulating ops ----------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    groups=st.sampled_from([1, 2]),
    cg=st.sampled_from([1, 3, 17]),
    k=st.sampled_from([(1, 1), (3, 3), (2, 3), (5, 5)]),
    stride=st.sampled_from([(1, 1), (2, 2), (1, 2)]),
    dil=st.sampled_from([(1, 1), (2, 1)]),
    pad=st.tuples(*[st.integers(0, 2)] * 4),
    x_zp=st.integers(-128, 127),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
)
def test_qconv2d_bit_exact(
    seed, groups, cg, k, stride, dil, pad, x_zp, per_channel, with_bias
) -> None:
    rng = np.random.default_rng(seed)
    o = 2 * groups
    x = i8(rng, (2, cg * groups, 9, 10))
    w = i8(rng, (o, cg, *k), lo=-127)
    b = rng.integers(-5000, 5000, o).astype(np.int32) if with_bias else None
    mult, shift = multipliers(rng, o if per_channel else 1)
    attrs = dict(
        stride=stride,
        padding=pad,
        dilation=dil,
        groups=groups,
        x_zp=x_zp,
        multiplier=mult,
        shift=shift,
        out_scale=0.05,
        out_zp=-3,
    )
    y = run("qconv2d", [x, w] + ([b] if with_bias else []), **attrs)
    assert np.array_equal(y, naive_conv(x, w, b, stride, pad, dil, groups, x_zp, mult, shift, -3))


def test_qconv2d_depthwise_and_large_channels_exact() -> None:
    rng = np.random.default_rng(3)
    x = i8(rng, (1, 6, 6, 6))
    w = i8(rng, (6, 1, 3, 3), lo=-127)
    mult, shift = multipliers(rng, 6)
    y = run(
        "qconv2d",
        [x, w],
        padding=(1, 1, 1, 1),
        groups=6,
        x_zp=7,
        multiplier=mult,
        shift=shift,
        out_scale=0.1,
    )
    assert np.array_equal(
        y, naive_conv(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 6, 7, mult, shift, 0)
    )
    # K = 64 * 9: the shift-and-GEMM path, worst-case operands (|x - zp| = 255, |w| = 127)
    x = np.full((1, 64, 4, 4), 127, np.int8)
    w = np.full((2, 64, 3, 3), -127, np.int8)
    y = run("qconv2d", [x, w], x_zp=-128, multiplier=(2**30,), shift=(30,), out_scale=1.0)
    assert np.array_equal(
        y, naive_conv(x, w, None, (1, 1), (0,) * 4, (1, 1), 1, -128, (2**30,), (30,), 0)
    )


def test_qconv2d_padding_contributes_zero() -> None:
    x = np.full((1, 2, 4, 4), -9, np.int8)  # every pixel equals x_zp: all differences are 0
    w = np.full((3, 2, 3, 3), 100, np.int8)
    b = np.array([1000, -1000, 0], np.int32)
    m, s = quantize_multiplier(0.01)
    y = run(
        "qconv2d",
        [x, w, b],
        padding=(1, 1, 1, 1),
        x_zp=-9,
        multiplier=(m,),
        shift=(s,),
        out_scale=0.1,
        out_zp=4,
    )
    for c, bias in enumerate(b):
        assert np.all(y[0, c] == py_out(int(bias), m, s, 4))


def test_qconv2d_per_channel_rescale_differs_by_channel() -> None:
    x = np.full((1, 1, 1, 1), 10, np.int8)
    w = np.full((3, 1, 1, 1), 10, np.int8)
    mult, shift = zip(*(quantize_multiplier(r) for r in (1.0, 0.5, 0.25)))
    y = run("qconv2d", [x, w], multiplier=mult, shift=shift, out_scale=1.0)
    assert y.ravel().tolist() == [100, 50, 25]


def test_qlinear_and_qmatmul_bit_exact() -> None:
    rng = np.random.default_rng(4)
    x, w = i8(rng, (3, 5, 40)), i8(rng, (6, 40), lo=-127)
    b = rng.integers(-(10**5), 10**5, 6).astype(np.int32)
    mult, shift = multipliers(rng, 6, 1e-4, 1e-3)
    y = run("qlinear", [x, w, b], x_zp=-20, multiplier=mult, shift=shift, out_scale=0.2, out_zp=9)
    acc = (x.astype(np.int64) + 20) @ w.astype(np.int64).T + b
    want = np.vectorize(lambda a, c: py_out(int(a), mult[c], shift[c], 9))(
        acc, np.arange(6)[None, None, :]
    )
    assert np.array_equal(y, want)
    a, bm = i8(rng, (2, 4, 30)), i8(rng, (2, 30, 3))
    m, s = quantize_multiplier(3e-4)
    y = run("qmatmul", [a, bm], a_zp=5, b_zp=-6, multiplier=(m,), shift=(s,), out_scale=1.0)
    acc = (a.astype(np.int64) - 5) @ (bm.astype(np.int64) + 6)
    assert np.array_equal(y, np.vectorize(lambda v: py_out(int(v), m, s, 0))(acc))


def test_accumulator_bound_checked_at_infer() -> None:
    op = get_op("qconv2d")
    types = [TensorType((1, 70000, 1, 1), DType.i8), TensorType((1, 70000, 1, 1), DType.i8)]
    with pytest.raises(QuantizationError, match="qconv2d.*K=70000"):
        op.infer_types(types, {"multiplier": (1,), "shift": (1,), "out_scale": 1.0})
    with pytest.raises(ShapeError, match="qmatmul"):
        get_op("qmatmul").infer_types(
            [TensorType((2, 40000), DType.i8), TensorType((40000, 2), DType.i8)],
            {"multiplier": (1,), "shift": (1,), "out_scale": 1.0},
        )


def test_bad_attributes_rejected_with_op_name() -> None:
    types = [TensorType((1, 4), DType.i8), TensorType((3, 4), DType.i8)]
    with pytest.raises(ShapeError, match="qlinear.*multiplier and shift need 1 or 3"):
        get_op("qlinear").infer_types(
            types, {"multiplier": (1, 2), "shift": (3, 4), "out_scale": 1.0}
        )
    with pytest.raises(ShapeError, match="out_zp"):
        get_op("qlinear").infer_types(
            types, {"multiplier": (1,), "shift": (3,), "out_scale": 1.0, "out_zp": 200}
        )


# --- pooling -------------------------------------------------------------------------------------


def naive_avg(x, k, s, pad, ceil, include, x_zp, table, zp):
    n, c, h, w = x.shape

    def size(L, kk, ss, lo, hi):
        total = L + lo + hi - kk
        out = (-(-total // ss) if ceil else total // ss) + 1
        if ceil and (out - 1) * ss >= L + lo:
            out -= 1
        return out

    oh, ow = size(h, k[0], s[0], pad[0], pad[2]), size(w, k[1], s[1], pad[1], pad[3])
    out = np.zeros((n, c, oh, ow), np.int8)
    for p in range(oh):
        for q in range(ow):
            h0, w0 = p * s[0] - pad[0], q * s[1] - pad[1]
            h1, w1 = min(h0 + k[0], h + pad[2]), min(w0 + k[1], w + pad[3])
            cnt = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            if not include:
                cnt = (h1c - h0c) * (w1c - w0c)
            m, sh = table[cnt - 1]
            for b in range(n):
                for ch in range(c):
                    acc = int((x[b, ch, h0c:h1c, w0c:w1c].astype(np.int64) - x_zp).sum())
                    out[b, ch, p, q] = py_out(acc, m, sh, zp)
    return out


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.sampled_from([(2, 2), (3, 3), (3, 2)]),
    s=st.sampled_from([(1, 1), (2, 2)]),
    p=st.integers(0, 1),
    ceil=st.booleans(),
    include=st.booleans(),
)
def test_qavg_pool2d_bit_exact(seed, k, s, p, ceil, include) -> None:
    rng = np.random.default_rng(seed)
    x = i8(rng, (2, 3, 7, 6))
    table = [quantize_multiplier(0.8 / n) for n in range(1, k[0] * k[1] + 1)]
    mult, shift = zip(*table)
    y = run(
        "qavg_pool2d",
        [x],
        kernel=k,
        stride=s,
        padding=(p,) * 4,
        ceil_mode=ceil,
        count_include_pad=include,
        x_zp=-2,
        multiplier=mult,
        shift=shift,
        out_scale=0.1,
        out_zp=3,
    )
    assert np.array_equal(y, naive_avg(x, k, s, (p,) * 4, ceil, include, -2, table, 3))


def test_qadaptive_avg_pool2d_bit_exact() -> None:
    rng = np.random.default_rng(5)
    x = i8(rng, (1, 2, 7, 5))
    out = (3, 2)
    table = [quantize_multiplier(1.0 / n) for n in range(1, 13)]
    mult, shift = zip(*table)
    y = run(
        "qadaptive_avg_pool2d",
        [x],
        output_size=out,
        x_zp=4,
        multiplier=mult,
        shift=shift,
        out_scale=0.1,
        out_zp=4,
    )
    for p in range(3):
        for q in range(2):
            h0, h1 = (p * 7) // 3, math.ceil((p + 1) * 7 / 3)
            w0, w1 = (q * 5) // 2, math.ceil((q + 1) * 5 / 2)
            m, s = table[(h1 - h0) * (w1 - w0) - 1]
            for c in range(2):
                acc = int((x[0, c, h0:h1, w0:w1].astype(np.int64) - 4).sum())
                assert y[0, c, p, q] == py_out(acc, m, s, 4)


def test_qmax_pool2d_padding_never_wins_and_keeps_params() -> None:
    x = np.full((1, 1, 3, 3), -128, np.int8)
    x[0, 0, 1, 1] = -100
    y = run("qmax_pool2d", [x], kernel=(2, 2), stride=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True)
    assert y.tolist() == [[[[-128, -128], [-128, -100]]]]
    (t,) = get_op("qmax_pool2d").infer_types(
        [
            TensorType((1, 1, 3, 3), DType.i8).with_quant(
                cuvil_ref.ir.QuantParams.per_tensor(0.5, 3)
            )
        ],
        {"kernel": (2, 2)},
    )
    assert t.quant is not None and t.quant.zero_point == (3,)
    rng = np.random.default_rng(6)
    x = i8(rng, (2, 3, 6, 7))
    y = run("qmax_pool2d", [x], kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1))
    for p in range(3):
        for q in range(4):
            h0, w0 = max(2 * p - 1, 0), max(2 * q - 1, 0)
            win = x[:, :, h0 : 2 * p + 2, w0 : 2 * q + 2]
            assert np.array_equal(y[:, :, p, q], win.max(axis=(2, 3)))


def test_graph_of_quantized_ops_interprets_deterministically() -> None:
    rng = np.random.default_rng(7)
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 2, 5, 5), DType.f32))
    q = b.op("quantize", [x], {"scale": (0.05,), "zero_point": (3,)})
    w = b.constant("w", i8(rng, (4, 2, 3, 3), lo=-127))
    mult, shift = multipliers(rng, 4)
    y = b.op(
        "qconv2d",
        [q, w],
        {"x_zp": 3, "multiplier": mult, "shift": shift, "out_scale": 0.1, "out_zp": -1},
    )
    assert y.type.quant == cuvil_ref.ir.QuantParams.per_tensor(np.float32(0.1), -1)
    out = b.op("dequantize", [y], {"scale": (0.1,), "zero_point": (-1,)})
    g = b.build([out])
    xin = rng.normal(size=(3, 2, 5, 5)).astype(np.float32)
    first, second = interpret(g, [xin])[0], interpret(g, [xin])[0]
    assert first.dtype == np.float32 and first.tobytes() == second.tobytes()


@pytest.mark.parametrize(
    "c, k, groups",
    [(600, 1, 1), (15, 7, 1), (64, 3, 1), (1100, 1, 2), (600, 3, 2), (514, 1, 1), (8, 3, 1)],
)
def test_qconv2d_exact_on_every_gemm_path(c: int, k: int, groups: int) -> None:
    """Reductions just above and below float32's exact range (K * 255 * 128 < 2**24, per tap or
    whole). x is constant, so the accumulator is one number per channel; the bias cancels it up
    to a small residue r, and with ratio 1 the output is r only if every bit of the sum is right.
    """
    rng = np.random.default_rng(c + k)
    x = np.full((1, c, k + 1, k + 1), 127, np.int8)  # x - x_zp = 255 everywhere
    w = rng.integers(-127, -100, (4, c // groups, k, k)).astype(np.int8)  # one sign: no cancelling
    exact = 255 * w.astype(np.int64).sum(axis=(1, 2, 3))
    residue = rng.integers(-100, 100, 4)
    bias = (residue - exact).astype(np.int32)
    y = run(
        "qconv2d",
        [x, w, bias],
        groups=groups,
        x_zp=-128,
        multiplier=(2**30,),
        shift=(30,),
        out_scale=1.0,
    )
    assert np.array_equal(y, np.broadcast_to(residue[None, :, None, None], y.shape))


@pytest.mark.parametrize("k", [258, 259, 514, 515, 2000])
def test_qlinear_qmatmul_exact_around_float32_limit(k: int) -> None:
    rng = np.random.default_rng(k)
    x = np.full((2, k), 127, np.int8)
    w = rng.integers(-127, -100, (3, k)).astype(np.int8)
    residue = rng.integers(-100, 100, 3)
    bias = (residue - 255 * w.astype(np.int64).sum(axis=1)).astype(np.int32)
    y = run("qlinear", [x, w, bias], x_zp=-128, multiplier=(2**30,), shift=(30,), out_scale=1.0)
    assert np.array_equal(y, np.broadcast_to(residue, y.shape))
    x[1] = rng.integers(100, 128, k)
    b = rng.integers(-128, -120, (k, 2)).astype(np.int8)
    y = run("qmatmul", [x, b], a_zp=-128, b_zp=127, multiplier=(2**30,), shift=(50,), out_scale=1.0)
    acc = (x.astype(np.int64) + 128) @ (b.astype(np.int64) - 127)
    assert y.tolist() == [[py_out(int(v), 2**30, 50, 0) for v in row] for row in acc]
