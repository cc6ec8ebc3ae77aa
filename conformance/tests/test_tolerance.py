"""The tolerance policy reads the op declarations; error metrics are NaN-aware and typed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cuvil_conformance.tolerance import Rule, compare, default_rule

from cuvil_ref.ops import REGISTRY


def test_every_op_has_a_parseable_tolerance_class() -> None:
    for opdef in REGISTRY:
        default_rule(opdef.name)  # raises on a malformed class
    assert default_rule("relu") == Rule("exact")
    assert default_rule("add") == Rule("ulp", 1)
    assert default_rule("fused_linear") == Rule("reduction", 8)
    assert default_rule("qconv2d") == Rule("exact")


def test_max_ulp_is_not_zero_when_the_expected_output_holds_nan() -> None:
    want = np.array([np.nan, 1.0, 2.0], np.float32)
    got = np.array([np.nan, 1.0, 2.5], np.float32)
    c = compare(got, want, Rule("ulp", 1))
    assert not c.ok
    assert c.metrics.max_ulp is not None and c.metrics.max_ulp > 1e5
    assert c.metrics.nan_expected == 1 and c.metrics.compared == 2


def test_nan_mismatches_are_counted_not_folded_into_the_maxima() -> None:
    want = np.array([np.nan, 1.0], np.float32)
    got = np.array([3.0, 1.0], np.float32)
    c = compare(got, want, Rule("exact"))
    assert not c.ok and c.metrics.nan_mismatches == 1
    assert c.metrics.max_abs_err == 0.0  # over the one position both are numbers
    everything_nan = compare(
        np.full(3, np.nan, np.float32), np.full(3, np.nan, np.float32), Rule("ulp", 4)
    )
    assert everything_nan.ok and everything_nan.metrics.max_ulp is None


@pytest.mark.parametrize(
    ("got", "want"),
    [([np.inf, 1.0], [1.0, 1.0]), ([1.0, -np.inf], [1.0, np.inf]), ([np.nan], [np.inf])],
)
def test_infinities_must_match(got: list[float], want: list[float]) -> None:
    c = compare(np.array(got, np.float32), np.array(want, np.float32), Rule("reduction", 1), 100)
    assert not c.ok


def test_metrics_json_is_typed() -> None:
    c = compare(
        np.array([np.nan, 2.0], np.float32), np.array([1.0, 2.0], np.float32), Rule("exact")
    )
    data = json.loads(json.dumps(c.metrics.to_json(), allow_nan=False))
    assert data["nan_mismatches"] == 1 and isinstance(data["max_abs_err"], float)
    ints = compare(np.array([1, 5], np.int8), np.array([1, 2], np.int8), Rule("exact"))
    assert ints.metrics.max_abs_err == 3.0 and ints.metrics.max_ulp is None


def test_exact_accumulation_holds_a_fused_op_to_the_elementwise_bound() -> None:
    want = np.array([1.0], np.float32)
    off = np.array([1.0 + 2**-20], np.float32)  # 8 ulp of 1.0
    assert compare(off, want, Rule("reduction", 8), reduce_len=9).ok
    assert not compare(np.array([1.0 + 2**-19], np.float32), want, Rule("reduction", 8), 0).ok
