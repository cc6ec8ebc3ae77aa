"""canonicalize: the rewrite table removes no-op shape ops, identity arithmetic and cast chains."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.passes.canonicalize import canonicalize
from tests.passes._graphs import assert_equivalent, f32, ir, ops


def test_identity_chain_collapses_to_relu() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2, 3))
    one = b.constant("one", np.ones((1, 1), np.float32))
    y = b.op("mul", [x, one])
    y = b.op("reshape", [y], {"shape": (2, 3)})
    y = b.op("transpose", [y], {"dim0": 0, "dim1": 1})
    y = b.op("transpose", [y], {"dim0": 1, "dim1": 0})
    g = b.build([b.op("relu", [y])])
    after = canonicalize(g)
    assert after.changed
    assert ir(after.graph) == (
        "func @main(%x : f32[2,3]) -> (f32[2,3]) {\n"
        "  %relu : f32[2,3] = relu(%x)\n"
        "  return %relu\n"
        "}\n"
    )
    assert_equivalent(g, after.graph)


def test_permutes_compose_into_one() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2, 3, 4))
    y = b.op("permute", [x], {"perm": (2, 0, 1)})
    y = b.op("transpose", [y], {"dim0": 0, "dim1": 2})
    g = b.build([y])
    after = canonicalize(g).graph
    assert ops(after) == ["permute"]
    assert_equivalent(g, after)


def test_identity_arithmetic_kept_when_it_broadcasts_or_is_not_identity() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(3))
    ones = b.constant("ones", np.ones((2, 3), np.float32))  # broadcasts x to [2, 3]
    twos = b.constant("twos", np.full((3,), 2.0, np.float32))
    zero = b.constant("zero", np.zeros((), np.float32))
    y1 = b.op("mul", [ones, x])
    y2 = b.op("add", [x, twos])
    y3 = b.op("add", [zero, x])  # removed (commutative match)
    y4 = b.op("sub", [zero, x])  # 0 - x is not x
    g = b.build([y1, y2, y3, y4])
    after = canonicalize(g).graph
    assert ops(after) == ["mul", "add", "sub"]
    assert after.outputs[2].name == "x"
    assert_equivalent(g, after)


def test_cast_rules() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((4,), DType.f16))
    same = b.op("cast", [x], {"dtype": "f16"})
    wide = b.op("cast", [b.op("cast", [x], {"dtype": "f32"})], {"dtype": "i32"})  # lossless mid
    i = b.input("i", TensorType((4,), DType.i32))
    lossy = b.op("cast", [b.op("cast", [i], {"dtype": "i8"})], {"dtype": "i32"})  # must stay
    g = b.build([same, wide, lossy])
    after = canonicalize(g).graph
    assert after.outputs[0].name == "x"
    assert [(n.inputs[0].name, n.attrs["dtype"]) for n in after.nodes] == [
        ("x", "i32"),
        ("i", "i8"),
        ("cast_3", "i32"),
    ]
    args = [np.array([1.5, -2.5, 300.0, -0.0], np.float16), np.array([1, 200, -300, 5], np.int32)]
    assert_equivalent(g, after, args)


def test_nothing_to_do_reports_unchanged() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2))
    g = b.build([b.op("exp", [x])])
    result = canonicalize(g)
    assert not result.changed and result.graph is g
