"""fuse_elementwise: pointwise chains -> fused_elementwise, bit-identical to the chain."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Module
from cuvil_ref.ops.registry import OpDef
from cuvil_ref.passes.fuse_elementwise import fuse_elementwise
from cuvil_ref.passes.pipeline import optimize
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
        "  %exp : f32[3,4] = fused_elementwise(%x) {program = "
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


def _relu_chain(n: int) -> Module:
    b = GraphBuilder()
    y = b.input("x", f32(2, 3))
    for _ in range(n):
        y = b.op("relu", [y])
    return Module(b.build([y]), "chain")


def test_long_chain_compiles_with_linearly_many_inferences(monkeypatch) -> None:  # noqa: ANN001
    """500 chained relus once took 250k type inferences (the chain grew one link per rewrite)."""
    calls = [0]
    infer_types = OpDef.infer_types

    def counting(self: OpDef, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return infer_types(self, *args, **kwargs)

    monkeypatch.setattr(OpDef, "infer_types", counting)
    counts = {}
    for n in (100, 500):
        module = _relu_chain(n)
        calls[0] = 0
        optimized, _ = optimize(module, opt_level=3, verify_each=True)  # verified after each pass
        counts[n] = calls[0]
        assert ops(optimized.graph) == ["fused_elementwise"]
    assert counts[500] <= 6 * counts[100], counts  # linear: 5x the chain, about 5x the work
    assert counts[500] <= 40 * 500, counts
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(interpret(optimized, [x])[0], np.maximum(x, 0))
