"""The conformance suite for every op the pack claims (quick), and int8 ops in full (bit-exact)."""

from __future__ import annotations

import cuvil_conformance
import pytest
from cuvil_kernels_cuda.lowering import LOWERINGS

from cuvil_ref.ops import REGISTRY

CLAIMED = sorted(op for op in LOWERINGS if op in REGISTRY)
INT8_OPS = sorted(op for op in CLAIMED if REGISTRY.get(op).category == "quantized")
#: A few float ops run in full besides the int8 ones (the whole set would take too long).
FULL_FLOAT = ["add", "relu", "max_pool2d", "softmax"]


def _check(report: object) -> None:
    bad = [r for r in report.results if r.status in ("failed", "error")]
    assert not bad, "\n".join(f"{r.status} {r.id}: {r.reason}" for r in bad)
    passed = {r.op for r in report.results if r.status == "passed"}
    missing = set(report.ops) - passed
    assert not missing, f"claimed ops with no passing case: {sorted(missing)}"


@pytest.mark.slow
def test_quick_suite_for_every_claimed_op() -> None:
    _check(cuvil_conformance.run_suite("cuda", ops=CLAIMED, quick=True))


@pytest.mark.slow
def test_full_suite_for_int8_and_some_float_ops() -> None:
    report = cuvil_conformance.run_suite("cuda", ops=INT8_OPS + FULL_FLOAT, quick=False)
    _check(report)
    int8 = [r for r in report.results if r.op in INT8_OPS and r.status == "passed"]
    assert int8 and all(r.max_abs_err == 0 for r in int8)
