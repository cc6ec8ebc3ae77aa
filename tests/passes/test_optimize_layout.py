"""optimize_layout: conv/pool/pointwise regions run in NHWC with transposes only at the edges."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.optimize_layout import make_optimize_layout, optimize_layout
from tests.passes._graphs import assert_equivalent, f32, ir, ops, randn


def _cnn() -> Graph:
    b = GraphBuilder()
    x = b.input("x", f32(1, 3, 8, 8))
    y = b.op("conv2d", [x, b.constant("w1", randn(4, 3, 3, 3))], {"padding": (1, 1, 1, 1)})
    y = b.op("add", [y, b.constant("b1", randn(4, 1, 1, seed=1))])
    y = b.op("relu", [y])
    z = b.op("conv2d", [y, b.constant("w2", randn(4, 4, 1, 1)), b.constant("b2", randn(4))])
    y = b.op("add", [y, z])
    y = b.op("max_pool2d", [y], {"kernel": (2, 2)})
    y = b.op("adaptive_avg_pool2d", [y], {"output_size": (1, 1)})
    y = b.op("flatten", [y], {"start_dim": 1})
    return b.build([b.op("linear", [y, b.constant("fc", randn(2, 4))])])


def test_cnn_runs_nhwc_with_two_transposes() -> None:
    g = _cnn()
    after = optimize_layout(g)
    assert after.changed
    assert ops(after.graph) == [
        "permute",
        "fused_conv2d",
        "add",
        "relu",
        "fused_conv2d",
        "add",
        "max_pool2d_nhwc",
        "adaptive_avg_pool2d_nhwc",
        "permute",
        "flatten",
        "linear",
    ]
    text = ir(after.graph)
    assert "%permute : f32[1,8,8,3]@NHWC = permute(%x) {perm = (0, 2, 3, 1)}" in text
    assert "const %b1_nhwc : f32[1,1,1,4]" in text  # the broadcast bias was permuted
    assert all(n.outputs[0].type.layout == "NHWC" for n in after.graph.nodes[:8]), (
        "every value inside the region is tagged NHWC"
    )
    assert_equivalent(g, after.graph)


def test_graph_output_inside_region_goes_back_to_nchw_once() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(2, 2, 5, 5))
    y = b.op("conv2d", [x, b.constant("w", randn(3, 2, 3, 3))])
    y = b.op("sigmoid", [y])
    g = b.build([y, b.op("reshape", [y], {"shape": (2, -1)})])
    after = optimize_layout(g).graph
    assert ops(after) == ["permute", "fused_conv2d", "sigmoid", "permute", "reshape"]
    assert after.outputs[0].type.layout is None
    assert_equivalent(g, after)


def test_adjacent_inverse_permutes_cancel() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(1, 2, 4, 4))
    y = b.op("conv2d", [x, b.constant("w", randn(2, 2, 1, 1))])
    y = b.op("flatten", [y])  # forces NCHW ...
    g0 = b.build([y])
    # ... while a later conv reads the same value: it must reuse the NHWC one, not transpose back
    b2 = GraphBuilder()
    x = b2.input("x", f32(1, 2, 4, 4))
    y = b2.op("conv2d", [x, b2.constant("w", randn(2, 2, 1, 1))])
    f = b2.op("flatten", [y])
    z = b2.op("conv2d", [y, b2.constant("w2", randn(2, 2, 1, 1))])
    g = b2.build([f, z])
    after = optimize_layout(g).graph
    assert ops(after).count("permute") == 3  # in, before flatten, out: none between the convs
    assert_equivalent(g, after)
    assert_equivalent(g0, optimize_layout(g0).graph)


def test_other_layouts_leave_the_graph_alone() -> None:
    g = _cnn()
    for layout in (None, "NCHW", "NCHWc8"):
        result = make_optimize_layout(layout)(g)
        assert not result.changed and result.graph is g
    np.testing.assert_equal(len(make_optimize_layout("NHWC")(g).graph.nodes), 11)
