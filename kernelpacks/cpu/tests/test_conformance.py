"""The conformance suite for every op the pack claims (quick), int8 ops in full (bit-exact)."""

from __future__ import annotations

import pytest
from cuvil_kernels_cpu.lowering import LOWERINGS

from cuvil_ref.ops import REGISTRY

cuvil_conformance = pytest.importorskip("cuvil_conformance")

CLAIMED = sorted(op for op in LOWERINGS if op in REGISTRY)
INT8_OPS = sorted(op for op in CLAIMED if REGISTRY.get(op).category == "quantized")
FULL_FLOAT = ["conv2d", "fused_conv2d", "linear", "fused_linear", "matmul", "softmax",
              "layer_norm", "max_pool2d", "avg_pool2d", "add", "relu6"]  # fmt: skip


def _check(report: object) -> None:
    bad = [r for r in report.results if r.status in ("failed", "error")]
    assert not bad, "\n".join(f"{r.status} {r.id}: {r.reason}" for r in bad)
    passed = {r.op for r in report.results if r.status == "passed"}
    missing = set(report.ops) - passed
    assert not missing, f"claimed ops with no passing case: {sorted(missing)}"


def test_quick_suite_for_every_claimed_op() -> None:
    _check(cuvil_conformance.run_suite("cpu", ops=CLAIMED, quick=True))


def test_full_suite_for_int8_and_the_model_ops() -> None:
    report = cuvil_conformance.run_suite("cpu", ops=INT8_OPS + FULL_FLOAT, quick=False)
    _check(report)
    int8 = [r for r in report.results if r.op in INT8_OPS and r.status == "passed"]
    assert int8 and all(r.max_abs_err == 0 for r in int8)
