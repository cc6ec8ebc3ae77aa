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


def test_constants_equal_in_value_but_not_in_bytes_stay_apart() -> None:
    """-0.0 == 0.0, but 1 / -0.0 is -inf: constants merge only when their bytes agree, also when
    they differ only outside the sampled fingerprint."""
    b = GraphBuilder()
    x = b.input("x", f32(3))
    zero = b.constant("zero", np.zeros(3, np.float32))
    negzero = b.constant("negzero", -np.zeros(3, np.float32))
    big1 = b.constant("big1", np.zeros(10000, np.float32))
    big2_data = np.zeros(10000, np.float32)
    big2_data[1] = 1.0  # not on the fingerprint's sample stride
    big2 = b.constant("big2", big2_data)
    g = b.build([b.op("div", [x, zero]), b.op("div", [x, negzero]), big1, big2])
    after = eliminate_common_subexpressions(g).graph
    assert set(after.constants) == {"zero", "negzero", "big1", "big2"}
    assert_equivalent(g, after, [np.ones(3, np.float32)])
