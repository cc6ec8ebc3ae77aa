"""fold_batchnorm: batch_norm after conv2d / linear folds into their weights and bias."""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from tests.passes._graphs import assert_equivalent, f32, ir, ops, randn


def _bn_params(b: GraphBuilder, c: int) -> list:
    rng = np.random.default_rng(1)
    return [
        b.constant("mean", rng.standard_normal(c).astype(np.float32)),
        b.constant("var", rng.uniform(0.5, 2.0, c).astype(np.float32)),
        b.constant("gamma", rng.standard_normal(c).astype(np.float32)),
        b.constant("beta", rng.standard_normal(c).astype(np.float32)),
    ]


def _conv_bn(groups: int = 1, bias: bool = True) -> Graph:
    b = GraphBuilder()
    x = b.input("x", f32(1, 4, 6, 6))
    w = b.constant("conv.weight", randn(6, 4 // groups, 3, 3))
    args = [x, w] + ([b.constant("conv.bias", randn(6, seed=3))] if bias else [])
    y = b.op("conv2d", args, {"padding": (1, 1, 1, 1), "groups": groups})
    return b.build([b.op("batch_norm", [y, *_bn_params(b, 6)], {"eps": 1e-3})])


def test_conv_bn_folds() -> None:
    g = _conv_bn()
    after = fold_batchnorm(g)
    assert after.changed
    text = ir(after.graph)
    assert "batch_norm" not in text
    assert "%conv2d_1 : f32[1,6,6,6] = conv2d(%x, %conv.weight_bn, %conv.bias_bn)" in text
    assert_equivalent(g, after.graph)


def test_grouped_conv_without_bias_folds() -> None:
    g = _conv_bn(groups=2, bias=False)
    after = fold_batchnorm(g).graph
    assert ops(after) == ["conv2d"]
    assert_equivalent(g, after)


def test_linear_bn_folds_and_shared_conv_does_not() -> None:
    b = GraphBuilder()
    x = b.input("x", f32(3, 5))
    y = b.op("linear", [x, b.constant("fc.weight", randn(6, 5))])
    lin = b.op("batch_norm", [y, *_bn_params(b, 6)])
    # conv output read twice: folding would change the other reader
    xc = b.input("xc", f32(1, 2, 4, 4))
    conv = b.op("conv2d", [xc, b.constant("w", randn(6, 2, 1, 1))])
    bn = b.op("batch_norm", [conv, *_bn_params(b, 6)])
    g = b.build([lin, bn, conv])
    after = fold_batchnorm(g).graph
    assert ops(after) == ["linear", "conv2d", "batch_norm"]
    assert_equivalent(g, after)
