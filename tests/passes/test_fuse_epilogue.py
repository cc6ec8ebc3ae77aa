"""fuse_epilogue: producer + bias + activation + residual -> one fused op, order recorded."""

from __future__ import annotations

import pytest

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.passes.fuse_epilogue import fuse_epilogue
from tests.passes._graphs import assert_equivalent, f32, ir, ops, randn


def test_resnet_style_add_then_relu() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(1, 4, 5, 5))
    idt = b.input("identity", f32(1, 6, 5, 5))
    y = b.op("conv2d", [x, b.constant("w", randn(6, 4, 3, 3))], {"padding": (1, 1, 1, 1)})
    y = b.op("add", [y, b.constant("bias", randn(6, 1, 1, seed=2))])
    y = b.op("add", [idt, y])
    g = b.build([b.op("relu", [y])])
    after = fuse_epilogue(g)
    assert after.changed
    assert ir(after.graph).splitlines()[-3:-1] == [
        "  %fused_conv2d_2 : f32[1,6,5,5] = fused_conv2d(%x, %w, %w_bias, %identity) "
        "{stride = (1, 1), padding = (1, 1, 1, 1), dilation = (1, 1), groups = 1, "
        'activation = "relu", activation_min = none, activation_max = none, has_residual = true, '
        'order = "residual_then_activation", data_layout = "NCHW"}',
        "  return %fused_conv2d_2",
    ]
    assert_equivalent(g, after.graph)


def test_activation_then_residual_order() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2, 3))
    r = b.input("r", f32(2, 4))
    y = b.op("linear", [x, b.constant("w", randn(4, 3)), b.constant("b", randn(4))])
    y = b.op("clamp", [y], {"min": -0.5, "max": 0.5})
    g = b.build([b.op("add", [y, r])])
    after = fuse_epilogue(g).graph
    (node,) = after.nodes
    assert node.op == "fused_linear"
    assert node.attrs["order"] == "activation_then_residual"
    assert (node.attrs["activation_min"], node.attrs["activation_max"]) == (-0.5, 0.5)
    assert_equivalent(g, after)


@pytest.mark.parametrize(
    ("act", "attrs"),
    [
        ("relu6", {}),
        ("gelu", {}),
        ("gelu", {"approximate": "tanh"}),
        ("silu", {}),
        ("hardswish", {}),
    ],
)
def test_matmul_bias_activation(act: str, attrs: dict) -> None:
    b = GraphBuilder()
    a = b.input("a", f32(2, 3, 4))
    y = b.op("matmul", [a, b.constant("m", randn(4, 5))])
    y = b.op("add", [b.constant("bias", randn(5)), y])
    g = b.build([b.op(act, [y], attrs)])
    after = fuse_epilogue(g).graph
    assert ops(after) == ["fused_matmul"]
    assert_equivalent(g, after)


def test_multi_use_and_non_channel_constants_do_not_fuse() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(1, 2, 4, 4))
    conv = b.op("conv2d", [x, b.constant("w", randn(3, 2, 1, 1))])
    spatial = b.op("add", [conv, b.constant("row", randn(4, seed=5))])  # along W, not channels
    used_twice = b.op("conv2d", [x, b.constant("w2", randn(3, 2, 1, 1))])
    g = b.build([b.op("relu", [spatial]), b.op("exp", [used_twice]), used_twice])
    after = fuse_epilogue(g).graph
    # a [W]-shaped constant is neither a bias nor a same-typed residual; a conv read twice
    # keeps its own output
    assert ops(after) == ["conv2d", "add", "conv2d", "relu", "exp"]
    assert_equivalent(g, after)


def test_full_shape_constant_added_to_linear_is_a_residual() -> None:
    """``Linear(x) + buffer`` (a learned position embedding): the constant has the output's full
    shape, so it is a residual, not a bias. This crashed with ``KeyError: 'c'`` (issue 11)."""
    b = GraphBuilder()
    x = b.input("x", f32(3, 4))
    y = b.op("linear", [x, b.constant("w", randn(4, 4)), b.constant("b", randn(4, seed=1))])
    g = b.build([b.op("add", [y, b.constant("pos", randn(3, 4, seed=3))])])
    after = fuse_epilogue(g).graph
    assert ops(after) == ["fused_linear"]
    assert after.nodes[0].attrs["has_residual"]
    assert_equivalent(g, after)
