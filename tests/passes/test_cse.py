"""cse: duplicate nodes and duplicate constants are merged."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.passes.cse import eliminate_common_subexpressions
from tests.passes._graphs import assert_equivalent, f32, ir


def test_duplicates_merge() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2))
    c1 = b.constant("c1", np.array([1.0, 2.0], np.float32))
    c2 = b.constant("c2", np.array([1.0, 2.0], np.float32))
    a1 = b.op("add", [x, c1])
    a2 = b.op("add", [x, c2])  # same as a1 once c2 is c1
    e1 = b.op("exp", [a1])
    e2 = b.op("exp", [a2])
    g = b.build([b.op("mul", [e1, e2])])
    after = eliminate_common_subexpressions(g)
    assert after.changed
    assert ir(after.graph) == (
        "const %c1 : f32[2] = dense<[1.0, 2.0]>\n"
        "func @main(%x : f32[2]) -> (f32[2]) {\n"
        "  %add : f32[2] = add(%x, %c1)\n"
        "  %exp : f32[2] = exp(%add)\n"
        "  %mul : f32[2] = mul(%exp, %exp)\n"
        "  return %mul\n"
        "}\n"
    )
    assert_equivalent(g, after.graph)


def test_different_attrs_or_dtypes_stay_apart() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(4))
    y1 = b.op("leaky_relu", [x], {"negative_slope": 0.1})
    y2 = b.op("leaky_relu", [x], {"negative_slope": 0.2})
    c1 = b.constant("c1", np.zeros(2, np.float32))
    c2 = b.constant("c2", np.zeros(2, np.int32))
    g = b.build([y1, y2, b.op("cast", [c1], {"dtype": "i32"}), c2])
    result = eliminate_common_subexpressions(g)
    assert not result.changed
