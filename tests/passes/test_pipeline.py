"""The pipeline: every opt_level verifies after each pass and keeps results within f32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import PassError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.passes.pipeline import (
    FUSION_PASSES,
    LAYOUT_PASSES,
    LEVELS,
    PASSES,
    build_pipeline,
    optimize,
)
from cuvil_ref.plugin.types import TargetPreferences
from tests.passes._graphs import assert_equivalent, f32, randn


def _model() -> Graph:
    """A small CNN with every pattern the passes look for."""
    b = GraphBuilder()
    x = b.input("x", f32(2, 3, 8, 8))
    one = b.constant("one", np.ones((1,), np.float32))
    y = b.op("mul", [x, one])
    w = b.op("mul", [b.constant("w0", randn(4, 3, 3, 3)), b.constant("k", np.float32(0.5))])
    y = b.op("conv2d", [y, w], {"padding": (1, 1, 1, 1)})
    rng = np.random.default_rng(3)
    bn = [b.constant(n, rng.uniform(0.5, 1.5, 4).astype(np.float32)) for n in "mvgb"]
    y = b.op("batch_norm", [y, *bn])
    y = b.op("relu", [y])
    z = b.op("conv2d", [y, b.constant("w1", randn(4, 4, 1, 1))])
    z2 = b.op("conv2d", [y, b.constant("w1b", randn(4, 4, 1, 1))])  # a CSE duplicate
    y = b.op("add", [b.op("add", [z, z2]), y])
    y = b.op("mul", [y, b.constant("half", np.float32(0.5))])
    y = b.op("tanh", [y])
    y = b.op("max_pool2d", [y], {"kernel": (2, 2)})
    y = b.op("flatten", [y], {"start_dim": 1})
    return b.build([b.op("linear", [y, b.constant("fc", randn(5, 64))])])


def test_levels_are_cumulative_and_tables_consistent() -> None:
    assert LEVELS[0] == ()
    for level in (1, 2, 3):
        assert set(LEVELS[level - 1]) <= set(LEVELS[level])
        assert all(name in PASSES for name in LEVELS[level])
    assert set(LEVELS[2]) >= FUSION_PASSES and set(LEVELS[3]) - set(LEVELS[2]) >= LAYOUT_PASSES
    assert LEVELS[3][-1] == "dce"


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_every_level_keeps_results(level: int) -> None:
    g = _model()
    module, timings = optimize(Module(g), opt_level=level, verify_each=True)
    assert [t["pass"] for t in timings] == list(LEVELS[level])
    assert_equivalent(g, module.graph)
    hist = module.graph.op_histogram()
    if level >= 1:
        assert len(module.graph.nodes) < len(g.nodes)
    if level >= 2:
        assert "batch_norm" not in hist and "relu" not in hist and "fused_elementwise" in hist
    if level == 3:
        assert hist.get("permute") == 2 and "max_pool2d_nhwc" in hist


def test_switches_and_preferences() -> None:
    names = [p.name for p in build_pipeline(3, enable_fusion=False, enable_layout_opt=False)]
    assert names == list(LEVELS[1]) + ["dce", "dce"]
    prefs = TargetPreferences(layout="NCHWc8", disable_passes=("cse",), extra_passes=("dce",))
    passes = build_pipeline(3, preferences=prefs)
    assert "cse" not in [p.name for p in passes] and passes[-1].name == "dce"
    layout_pass = next(p for p in passes if p.name == "optimize_layout")
    assert not layout_pass(_model()).changed  # no reference ops for NCHWc8: left alone
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        build_pipeline(1, preferences=TargetPreferences(extra_passes=("nope",)))
    with pytest.raises(PassError, match="opt_level"):
        build_pipeline(7)
