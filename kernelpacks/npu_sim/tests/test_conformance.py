"""The conformance suite on npu-v3 (full) and npu-v2 (quick): every claimed op passes bit-exact."""

from __future__ import annotations

import pytest
from cuvil_conformance import run_suite
from cuvil_kernels_npu_sim.lowering import MOVES, TABLE

from cuvil_ref.plugin.host import PluginHost

SUITE_SIDE = "case could not be built or interpreted"  # a broken case of the suite, not the pack


@pytest.mark.parametrize(("target", "quick"), [("npu-v3", False), ("npu-v2", True)])
def test_suite_passes_every_claimed_op(npu_host: PluginHost, target: str, quick: bool) -> None:
    report = run_suite(target, quick=quick, host=npu_host)
    results = report.results
    pack_failures = [
        f"{r.id}: {r.status}: {r.reason}"
        for r in results
        if r.status == "failed" or (r.status == "error" and not r.reason.startswith(SUITE_SIDE))
    ]
    assert not pack_failures, "\n".join(pack_failures)
    passed_ops = {r.op for r in results if r.status == "passed"}
    # every claimed op passes (quick mode has float-only shape cases), and nothing else runs here
    assert set(TABLE) - MOVES <= passed_ops <= set(TABLE)
    if not quick:
        assert passed_ops == set(TABLE)
    declined = [r for r in results if r.status == "unsupported" and r.op in TABLE]
    assert all(r.reason for r in declined)
    assert passed_ops <= set(report.summary()["supported_ops"])
    assert report.target["device"].startswith(f"{target} simulator")
