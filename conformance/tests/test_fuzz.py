"""The differential graph fuzzer: its graphs are well typed and varied, a bounded campaign on
``ref`` finds nothing, and every regression case it found so far passes now."""

from __future__ import annotations

import json

import pytest
from cuvil_conformance.fuzz import check_pipeline, check_torch, regressions, run_fuzz
from cuvil_conformance.fuzz.graphs import float_chains, int8_chains
from hypothesis import HealthCheck, given, settings

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.verifier import verify
from cuvil_ref.plugin.host import get_host

FILES = regressions.all_regressions()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_regression_case(path) -> None:
    data = json.loads(path.read_text())
    assert data["note"], f"{path.name}: say what was fixed"
    if data["expect"] == "refused":
        with pytest.raises(CuvilError):
            regressions.load(path)
        return
    case, meta = regressions.load(path)
    if meta["mode"] == "torch":
        pytest.importorskip("torch")
        assert check_torch(case) is None
        return
    host = get_host()
    spec = host.resolve(meta["target"])
    avail = host.availability(spec)
    if not avail.available:
        pytest.skip(f"target {spec.name} unavailable here: {avail.reason}")
    assert check_pipeline(case, meta["target"]) is None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(float_chains())
def test_float_chains_are_well_typed(case) -> None:
    verify(case.module)
    assert case.module.graph.nodes


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(int8_chains())
def test_int8_chains_are_well_typed(case) -> None:
    verify(case.module)
    assert case.module.graph.nodes[0].op == "quantize"


def test_bounded_campaign_on_ref(tmp_path) -> None:
    report = run_fuzz("ref", seconds=300, seed=7, save_dir=tmp_path, max_examples=150)
    assert report.ok, report.failures
    assert report.examples >= 150 and len(report.ops_seen) >= 40


def test_bounded_torch_campaign(tmp_path) -> None:
    pytest.importorskip("torch")
    report = run_fuzz("ref", 300, seed=3, mode="torch", save_dir=tmp_path, max_examples=100)
    assert report.ok, report.failures
    assert report.checked > 20


def test_a_failure_is_shrunk_and_saved(tmp_path, monkeypatch) -> None:
    """A check that fails on any graph holding an 'exp' ends with a saved, minimal case."""
    from cuvil_conformance.fuzz import campaign
    from cuvil_conformance.fuzz.check import Finding

    def fails_on_exp(case, target):
        ops = [n.op for n in case.module.graph.nodes]
        return Finding("opt_level 0", "planted") if "exp" in ops else None

    monkeypatch.setattr(campaign, "check_pipeline", fails_on_exp)
    report = run_fuzz("ref", seconds=120, seed=1, save_dir=tmp_path, max_failures=1)
    assert len(report.failures) == 1
    case, meta = regressions.load(report.failures[0][2])
    ops = [n.op for n in case.module.graph.nodes]
    assert "exp" in ops and len(ops) <= 3, ops  # shrunk to (nearly) the exp alone
    assert meta["finding"] == "opt_level 0: planted"


def test_malformed_regression_files_are_refused(tmp_path) -> None:
    bad = tmp_path / "x.json"
    for text in ("[]", '{"format": "other"}', json.dumps({"format": regressions.FORMAT})):
        bad.write_text(text)
        with pytest.raises(regressions.RegressionFormatError):
            regressions.load(bad)
