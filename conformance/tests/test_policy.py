"""A pack's declared skips: by case id, by op, or by a glob over case ids."""

from __future__ import annotations

import numpy as np
from cuvil_conformance.runner import skip_reason
from cuvil_conformance.tolerance import Rule, compare

from cuvil_ref.plugin import ConformancePolicy


def test_skips_match_id_op_and_glob() -> None:
    policy = ConformancePolicy(skips={"a/x-1": "id", "b": "op", "fused_*gelu[,-]*bound": "glob"})
    assert skip_reason(policy, "a/x-1", "a") == "id"
    assert skip_reason(policy, "b/anything", "b") == "op"
    assert skip_reason(policy, "fused_linear/f32-activation=gelu-epilogue_bound", "c") == "glob"
    assert skip_reason(policy, "fused_linear/f32-activation=gelu_tanh-epilogue_bound", "c") is None
    assert skip_reason(policy, "a/x-2", "a") is None


def test_epilogue_bound_has_the_elementwise_floor() -> None:
    # K = 0 (exact accumulation) holds a fused result to ulp:8, floor near zero included ...
    want = np.zeros(4, np.float32)
    near = np.full(4, 8 * 2.0**-23 * 2.0**-8 * 0.9, np.float32)
    assert compare(near, want, Rule.parse("reduction+ulp:8"), 0).ok
    assert compare(near, want, Rule.parse("ulp:8"), 0).ok
    # ... and no further.
    assert not compare(near * 2, want, Rule.parse("reduction+ulp:8"), 0).ok


def test_normalization_bound_counts_the_rows_condition_number() -> None:
    from cuvil_conformance.generators.points import conditioning

    from cuvil_ref.ops import REGISTRY

    ln = REGISTRY.get("layer_norm")
    attrs = {"normalized_shape": (2,), "eps": 1e-5}
    well = np.array([[-1.0, 1.0]], np.float32)
    ill = np.array([[-2.075871, -2.0520728]], np.float32)  # mean ~ 174 standard deviations
    assert conditioning(ln, [well], attrs) == 1
    assert 150 < conditioning(ln, [ill], attrs) < 200
    assert conditioning(REGISTRY.get("relu"), [ill], {}) == 0
    # eps=None (rms_norm: the dtype's own) is a valid declaration, found by the fuzzer
    assert conditioning(REGISTRY.get("rms_norm"), [well], {"normalized_shape": (2,), "eps": None})
