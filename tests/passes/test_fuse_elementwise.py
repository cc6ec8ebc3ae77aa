"""fuse_elementwise: pointwise chains -> fused_elementwise, bit-identical to the chain."""

from __future__ import annotations

import numpy as np

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.passes.fuse_elementwise import fuse_elementwise
from tests.passes._graphs import f32, ir, ops


def test_chain_with_scalars_fuses_bit_exactly() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(3, 4))
    y = b.op("mul", [x, b.constant("two", np.float32(2.0))])
    y = b.op("sub", [b.constant("one", np.ones((1, 1), np.float32)), y])  # 1 - y
    y = b.op("gelu", [y], {"approximate": "tanh"})
    y = b.op("clamp", [y], {"min": -1.0, "max": None})
    g = b.build([b.op("exp", [y])])
    after = fuse_elementwise(g)
    assert after.changed
    assert ir(after.graph).splitlines()[-3] == (
        "  %fused_elementwise_3 : f32[3,4] = fused_elementwise(%x) {program = "
        "\"mul(rhs=2.0, dtype='f32'); sub(lhs=1.0, dtype='f32'); gelu(approximate='tanh'); "
        'clamp(min=-1.0, max=None); exp"}'
    )
    xs = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    xs[0, :3] = [np.nan, np.inf, -np.inf]
    np.testing.assert_array_equal(interpret(after.graph, [xs])[0], interpret(g, [xs])[0])


def test_chain_breaks_at_multi_use_and_tensor_operands() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(4))
    z = b.input("z", f32(4))
    e = b.op("exp", [x])
    r = b.op("relu", [e])
    s = b.op("add", [r, z])  # tensor operand: not a step
    t = b.op("tanh", [b.op("neg", [s])])
    g = b.build([t, e])  # e is also an output: exp cannot be absorbed
    after = fuse_elementwise(g).graph
    assert ops(after) == ["exp", "relu", "add", "fused_elementwise"]
    xs = [np.linspace(-2, 2, 4, dtype=np.float32), np.ones(4, np.float32)]
    for got, want in zip(interpret(after, xs), interpret(g, xs), strict=True):
        np.testing.assert_array_equal(got, want)


def test_integer_and_cast_steps() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(5))
    y = b.op("cast", [b.op("mul", [x, b.constant("k", np.float32(3.0))])], {"dtype": "i32"})
    g = b.build([b.op("abs", [b.op("add", [y, b.constant("one", np.int64(1))])])])
    after = fuse_elementwise(g).graph
    assert ops(after) == ["fused_elementwise"]
    assert after.outputs[0].type == g.outputs[0].type
    xs = [np.array([-2.7, -0.5, 0.0, 1.2, 9.9], np.float32)]
    np.testing.assert_array_equal(interpret(after, xs)[0], interpret(g, xs)[0])
