"""The suite is able to fail: every planted bug is reported as a failure naming op and case."""

from __future__ import annotations

import pytest
from broken_packs import BROKEN, BrokenPack
from cuvil_conformance import run_suite

from cuvil_ref.plugin.host import PackRecord, PluginHost


@pytest.fixture(scope="module")
def host() -> PluginHost:
    h = PluginHost()
    h.load_entry_points()
    for name, (op, fn) in BROKEN.items():
        h.register(BrokenPack(name, {op: fn}, claims=[op]), PackRecord(name, "broken_packs", "0"))
    return h


@pytest.mark.parametrize("target", sorted(BROKEN))
def test_broken_pack_fails_on_its_op(host: PluginHost, target: str) -> None:
    op = BROKEN[target][0]
    report = run_suite(target, [op], host=host)
    s = report.summary()
    failed = [r for r in report.results if r.status == "failed"]
    assert failed, f"{target}: the suite did not catch the planted bug in {op}"
    assert all(r.op == op and r.id.startswith(f"{op}/") for r in failed)
    assert all(r.reason for r in failed)
    assert not report.ok
    assert s["passed"] + s["failed"] + s["errors"] + s["unsupported"] + s["skipped"] == s["total"]


def test_unclaimed_ops_are_unsupported_not_passed(host: PluginHost) -> None:
    report = run_suite("broken-nan", ["relu", "exp"], host=host, quick=True)
    by_op = {r.op: r.status for r in report.results}
    assert by_op["exp"] == "unsupported"
    assert report.summary()["coverage"] == 0.5
