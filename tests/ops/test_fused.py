"""Fused ops and NHWC variants: each equals the composition of the registered ops it names."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import ShapeError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ref(op: str, *args: np.ndarray, **attrs: object) -> np.ndarray:
    opdef = get_op(op)
    return opdef.reference(*args, **opdef.normalize_attrs(attrs))


CONV = {"stride": (2, 1), "padding": (1, 0, 1, 2), "groups": 2}


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("order", ["residual_then_activation", "activation_then_residual"])
def test_fused_conv2d_is_conv_bias_epilogue(layout: str, order: str) -> None:
    x, w, bias = rand(2, 4, 7, 6), rand(6, 2, 3, 3), rand(6)
    z = ref("conv2d", x, w, bias, **CONV)
    res = rand(*z.shape)
    want = (
        ref("add", ref("hardswish", z), res)
        if order.startswith("activation")
        else ref("hardswish", ref("add", z, res))
    )
    attrs = dict(CONV, activation="hardswish", has_residual=True, order=order, data_layout=layout)
    if layout == "NHWC":
        xin, rin = x.transpose(0, 2, 3, 1).copy(), res.transpose(0, 2, 3, 1).copy()
    else:
        xin, rin = x, res
    b = GraphBuilder()
    vals = [b.input("x", TensorType(xin.shape)), b.constant("w", w), b.constant("b", bias)]
    vals.append(b.input("r", TensorType(rin.shape)))
    y = b.op("fused_conv2d", vals, attrs)
    assert y.type.layout == (layout if layout == "NHWC" else None)
    (got,) = interpret(b.build([y]), [xin, rin])
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, want)


def test_fused_linear_and_matmul_clamp_and_gelu() -> None:
    x, w, bias = rand(3, 5), rand(4, 5), rand(4)
    got = ref(
        "fused_linear", x, w, bias, activation="clamp", activation_min=-0.1, activation_max=0.2
    )
    np.testing.assert_array_equal(got, ref("clamp", ref("linear", x, w, bias), min=-0.1, max=0.2))
    a, m = rand(2, 3, 5), rand(5, 4)
    got = ref("fused_matmul", a, m, bias, activation="gelu_tanh")
    want = ref("gelu", ref("add", ref("matmul", a, m), bias), approximate="tanh")
    np.testing.assert_array_equal(got, want)


def test_epilogue_attrs_are_checked() -> None:
    b = GraphBuilder()
    x, w, bias = (
        b.input("x", TensorType((1, 2))),
        b.constant("w", rand(3, 2)),
        b.constant("b", rand(3)),
    )
    with pytest.raises(ShapeError, match="has_residual"):
        b.op("fused_linear", [x, w, bias], {"has_residual": True})
    with pytest.raises(ShapeError, match="only for activation='clamp'"):
        b.op("fused_linear", [x, w, bias], {"activation": "relu", "activation_min": 0.0})
    r = b.input("r", TensorType((1, 4)))
    with pytest.raises(ShapeError, match="residual"):
        b.op("fused_linear", [x, w, bias, r], {"has_residual": True})


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("max_pool2d", {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        ("avg_pool2d", {"kernel": (2, 3), "ceil_mode": True}),
        ("adaptive_avg_pool2d", {"output_size": (2, 3)}),
    ],
)
def test_nhwc_pools_match_nchw(op: str, attrs: dict) -> None:
    x = rand(2, 3, 7, 8)
    want = ref(op, x, **attrs)
    got = ref(op + "_nhwc", x.transpose(0, 2, 3, 1).copy(), **attrs)
    np.testing.assert_array_equal(got.transpose(0, 3, 1, 2), want)
    (t,) = get_op(op + "_nhwc").infer_types((TensorType((2, 7, 8, 3)),), attrs)
    assert t == TensorType(got.shape, layout="NHWC")
