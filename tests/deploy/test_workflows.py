"""The release pipeline (.github/workflows/release.yml): actionlint passes, the jobs run in the
order model check -> compile -> A/B gate -> release, and the project commands its steps call
exist with the options given (parsed by the real click commands, nothing run)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
RELEASE = ROOT / ".github" / "workflows" / "release.yml"


def _jobs() -> dict[str, dict]:
    return yaml.safe_load(RELEASE.read_text())["jobs"]


def _commands(job: dict) -> list[list[str]]:
    """Every shell command line of a job's `run` steps, continuations joined, split as sh."""
    out = []
    for step in job["steps"]:
        for line in re.sub(r"\\\n\s*", " ", step.get("run", "")).splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(shlex.split(line, comments=True))
    return out


def test_actionlint_passes() -> None:
    tool = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is not installed (the serve-test extra installs it)")
        pytest.skip("needs actionlint (the serve-test extra)")
    assert WORKFLOWS
    out = subprocess.run([tool, *map(str, WORKFLOWS)], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def test_stages_in_order() -> None:
    jobs = _jobs()
    assert list(jobs) == ["check", "compile", "ab", "release"]
    assert [jobs[j].get("needs") for j in jobs] == [None, "check", "compile", "ab"]
    assert jobs["release"]["permissions"] == {"contents": "write"}
    assert all("timeout-minutes" in j for j in jobs.values())


def test_steps_call_real_commands(tmp_path: Path, monkeypatch) -> None:
    from cuvil_ref.cli.main import cli

    monkeypatch.chdir(tmp_path)  # files the steps name (empty stand-ins: nothing is run)
    (tmp_path / "m.cuvilir").write_bytes(b"")
    (tmp_path / "release.pem").write_bytes(b"")
    local = {"$model": "mlp", "$artifact": "m.cuvilir", "/tmp/release.pem": "release.pem"}
    jobs = _jobs()
    called = []
    for job in jobs.values():
        for args in _commands(job):
            if args[0] != "cuvil":
                continue
            for old, new in local.items():
                args = [a.replace(old, new) for a in args]
            command = cli.commands.get(args[1])
            assert command is not None, args
            # Options, choices and argument counts are checked by click itself.
            command.make_context(args[1], args[2:])
            called.append(args[1])
    assert {"compile", "sign"} <= set(called)
    gate = [a for a in _commands(jobs["ab"]) if a[:2] == ["python", "benchmarks/ab_gate.py"]]
    assert gate and (ROOT / "benchmarks" / "ab_gate.py").is_file()
    bench = " ".join(" ".join(a) for a in _commands(jobs["ab"]))
    assert "benchmarks/test_bench_core.py" in bench
    assert (ROOT / "benchmarks" / "test_bench_core.py").is_file()
    release = [" ".join(a) for a in _commands(jobs["release"])]
    assert any(c.startswith("cyclonedx-py environment") for c in release), release
    # The SBOM describes what the container image installs: the same steps as the Dockerfile.
    assert any("deploy/docker/steps.sh install" in c for c in release), release
