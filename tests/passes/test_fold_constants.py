"""fold_constants: constant-only subgraphs become constants computed by the interpreter."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.passes import fold_constants as fc
from tests.passes._graphs import assert_equivalent, f32, ir, ops


def test_constant_subgraph_is_folded() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2))
    w = b.constant("w", np.array([1.0, 4.0], np.float32))
    s = b.op("sqrt", [w])
    s2 = b.op("mul", [s, s])
    g = b.build([b.op("add", [x, s2])])
    after = fc.fold_constants(g)
    assert after.changed
    assert ir(after.graph) == (
        "const %w : f32[2] = dense<[1.0, 4.0]>\n"
        "const %sqrt : f32[2] = dense<[1.0, 2.0]>\n"
        "const %mul : f32[2] = dense<[1.0, 4.0]>\n"
        "func @main(%x : f32[2]) -> (f32[2]) {\n"
        "  %add : f32[2] = add(%x, %mul)\n"
        "  return %add\n"
        "}\n"
    )
    assert_equivalent(g, after.graph)


def test_large_results_are_not_folded(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(fc, "MAX_FOLD_BYTES", 16)
    b = GraphBuilder()
    x = b.input("x", f32(8))
    w = b.constant("w", np.arange(8, dtype=np.float32))
    g = b.build([b.op("add", [x, b.op("exp", [w])])])
    assert ops(fc.fold_constants(g).graph) == ["exp", "add"]


def test_symbolic_attrs_and_inputs_block_folding() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2))
    g = b.build([b.op("relu", [x])])
    assert not fc.fold_constants(g).changed
