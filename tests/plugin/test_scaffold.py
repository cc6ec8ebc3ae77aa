"""`cuvil pack new` copies the example pack under new names: the copy installs from its own
directory, is discovered through its entry point, passes conformance for the ops it claims and
its own tests; a broken pack beside it does not break the others."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cuvil_ref.errors import CuvilError
from cuvil_ref.plugin.scaffold import scaffold_pack

REPO = Path(__file__).resolve().parents[2]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_bad_names(tmp_path: Path) -> None:
    with pytest.raises(CuvilError, match="must start with a lowercase letter"):
        scaffold_pack("9lives", tmp_path)
    scaffold_pack("okpack", tmp_path)
    with pytest.raises(CuvilError, match="already exists"):
        scaffold_pack("okpack", tmp_path)


@pytest.mark.slow
def test_scaffolded_pack_installs_and_passes_conformance(tmp_path: Path) -> None:
    root = scaffold_pack("acme-npu", tmp_path)
    site = tmp_path / "site"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), str(REPO / "conformance/src")])
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--target",
        str(site),
        str(root),
    ]
    done = _run(pip, env, tmp_path)
    assert done.returncode == 0, done.stderr
    # a broken pack, installed the same way, must not break the others
    broken = tmp_path / "broken"
    (broken / "src/cuvil_pack_broken").mkdir(parents=True)
    (broken / "src/cuvil_pack_broken/__init__.py").write_text("")
    (broken / "src/cuvil_pack_broken/plugin.py").write_text("raise ImportError('no driver')\n")
    (broken / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "cuvil-kernels-broken"
        version = "0.0.1"
        [project.entry-points."cuvil.kernelpacks"]
        broken = "cuvil_pack_broken.plugin"
        [tool.setuptools.packages.find]
        where = ["src"]
        """)
    )
    assert _run(pip[:-1] + [str(broken)], env, tmp_path).returncode == 0
    code = textwrap.dedent("""\
        import json, cuvil_ref
        from cuvil_conformance import run_suite
        rows = cuvil_ref.targets()
        rep = run_suite("acme-npu", ["relu", "exp"])
        print(json.dumps({"rows": rows, "summary": rep.summary(),
                          "status": {r.op: r.status for r in rep.results}}))
        """)
    done = _run([sys.executable, "-c", code], env, tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {(r["pack"], r["target"]): r for r in data["rows"]}
    assert rows[("acme-npu", "acme-npu")]["available"] is True
    assert rows[("acme-npu", "acme-npu")]["version"] == "0.1.0"
    assert "no driver" in rows[("broken", None)]["error"]
    assert ("ref", "ref") in rows
    assert data["summary"]["passed"] > 0 and data["summary"]["failed"] == 0
    assert data["status"]["exp"] == "unsupported"
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    tests = _run([*pytest_cmd, str(root / "tests")], env, tmp_path)
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_the_copy_is_the_example_renamed(tmp_path: Path) -> None:
    root = scaffold_pack("acme", tmp_path)
    package = root / "src/cuvil_kernels_acme"
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py", "executable.py", "kernels.py", "lowering.py", "plugin.py", "py.typed"
    ]  # fmt: skip
    assert 'TARGET = "acme"' in (package / "plugin.py").read_text()
    assert 'acme = "cuvil_kernels_acme.plugin"' in (root / "pyproject.toml").read_text()
    example = REPO / "cuvil_ref/plugin/example_pack/src/cuvil_kernels_example/kernels.py"
    assert (package / "kernels.py").read_text() == example.read_text()


def _tutorial_commands() -> list[list[str]]:
    """The shell block of docs/plugin-authoring.md section 1, one argv per line."""
    text = (REPO / "docs/plugin-authoring.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_tutorial_commands_run(tmp_path: Path) -> None:
    """Runs the tutorial's commands as written, except that `pip install -e` installs into a
    folder on PYTHONPATH instead of this environment."""
    bindir = Path(sys.executable).parent
    site = tmp_path / "site"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), str(REPO / "conformance/src")])
    commands = _tutorial_commands()
    assert [c[0] for c in commands] == ["cuvil", "pip", "cuvil", "cuvil-conformance", "pytest"]
    report_json = tmp_path / "conformance.json"
    outputs = []
    for argv in commands:
        if argv[:3] == ["pip", "install", "-e"]:
            pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
            argv = [*pip, "--no-build-isolation", "--target", str(site), str(tmp_path / argv[3])]
        elif argv[0] == "pytest":
            argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *argv[1:]]
        elif argv[0] == "cuvil-conformance":
            argv = [str(bindir / argv[0]), *argv[1:], "--report-json", str(report_json)]
        else:
            argv = [str(bindir / argv[0]), *argv[1:]]
        done = _run(argv, env, tmp_path)
        outputs.append(done)
    failures = [
        f"{' '.join(c.args)} (exit {c.returncode}):\n{c.stdout[-2000:]}\n{c.stderr[-2000:]}"
        for c in outputs
        if c.returncode != 0
    ]
    conformance = json.loads(report_json.read_text())["summary"]
    assert conformance["passed"] > 0 and conformance["failed"] == conformance["errors"] == 0
    # Ops of the registry that have no conformance cases yet make the run exit 1 whatever the
    # pack; that is the suite's gap, not the pack's, so it is the one failure accepted here.
    uncovered = conformance.get("uncovered_ops", [])
    if uncovered and outputs[3].returncode == 1:
        failures = [f for f in failures if not f.startswith(str(bindir / "cuvil-conformance"))]
    assert not failures, "\n".join(failures)
    assert "acme-npu" in outputs[2].stdout
    assert "passed" in outputs[4].stdout
