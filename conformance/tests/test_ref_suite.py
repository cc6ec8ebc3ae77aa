"""``ref`` passes its own full suite, every registry op has cases, and reports are well formed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from cuvil_conformance import generate_cases, run_suite
from cuvil_conformance import report as reports

from cuvil_ref.ops import REGISTRY


@pytest.fixture(scope="module")
def ref_report():
    return run_suite("ref")


def test_every_registry_op_has_cases() -> None:
    cases, missing = generate_cases()
    assert missing == []
    assert {c.op for c in cases} == {d.name for d in REGISTRY if not d.regions}
    # asked for by name, an op without cases is reported, never dropped
    assert generate_cases(["if"])[1] == ["if"]


def test_case_ids_are_stable_and_unique() -> None:
    a, _ = generate_cases()
    b, _ = generate_cases()
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a)
    x, y = a[5].materialize(), b[5].materialize()
    assert all((u.tobytes() == v.tobytes()) for u, v in zip(x, y))


def test_ref_passes_everything(ref_report) -> None:
    bad = [(r.id, r.status, r.reason) for r in ref_report.results if r.status != "passed"]
    assert bad == []
    assert ref_report.summary()["coverage"] == 1.0


def test_reports(ref_report, tmp_path) -> None:
    reports.write_json(ref_report, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert set(data["summary"]) >= {
        "passed",
        "failed",
        "errors",
        "unsupported",
        "skipped",
        "total",
        "coverage",
    }
    assert {"id", "op", "dtype", "status", "max_abs_err", "max_ulp", "reason"} <= set(
        data["cases"][0]
    )
    reports.write_junit(ref_report, tmp_path / "r.xml")
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert int(root.get("tests")) == data["summary"]["total"]
    reports.write_markdown(ref_report, tmp_path / "r.md")
    assert "| passed |" in (tmp_path / "r.md").read_text()
    reports.write_html(ref_report, tmp_path / "r.html")
    assert "<table>" in (tmp_path / "r.html").read_text()
