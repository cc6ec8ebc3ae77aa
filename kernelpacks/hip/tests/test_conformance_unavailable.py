"""Without CuPy/GPU the conformance suite reports the hip target unavailable and counts every
case as unsupported, never passed (library entry point and CLI)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from cuvil_kernels_hip import plugin

from cuvil_ref.plugin import host as host_mod
from cuvil_ref.plugin.host import PackRecord, PluginHost

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here"
)
OPS = ["relu", "conv2d", "qadd"]


@pytest.fixture
def hip_host() -> Iterator[PluginHost]:
    host = PluginHost()
    host.load_entry_points()
    if "hip" not in host.target_names():
        host.register(plugin, PackRecord("hip", "cuvil_kernels_hip.plugin", "test"))
    previous = host_mod._HOST
    host_mod.reset_host(host)
    yield host
    host_mod.reset_host(previous)


def test_run_suite_counts_cases_unsupported(hip_host: PluginHost) -> None:
    from cuvil_conformance import run_suite

    report = run_suite("hip", OPS, quick=True, host=hip_host)
    summary = report.summary()
    assert report.target["available"] is False
    assert "CuPy is not installed" in report.target["reason"]
    assert summary["total"] > 0 and summary["unsupported"] == summary["total"]
    assert summary["passed"] == 0 and summary["coverage"] == 0.0
    assert all(r.reason.startswith("target unavailable: CuPy") for r in report.results)


def test_cli_says_unavailable(hip_host: PluginHost) -> None:
    from click.testing import CliRunner
    from cuvil_conformance.cli import main

    args = ["run", "--target", "hip", "--ops", ",".join(OPS), "--quick"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3, result.output  # unavailable: nothing ran, so not a success
    assert CliRunner().invoke(main, [*args, "--allow-unavailable"]).exit_code == 0
    assert "target 'hip' is unavailable" in result.output
    assert "CuPy is not installed" in result.output
    row = next(line for line in result.output.splitlines() if "0.0%" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[0] == "0" and cells[3] == cells[5] != "0"  # passed 0, unsupported == total
