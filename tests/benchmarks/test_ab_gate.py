"""The A/B gate (benchmarks/ab_gate.py): fails on a planted 20% regression, passes on noise.

The benchmark files are pytest-benchmark's own: statistics computed by its ``Stats`` class from
timing samples, in the layout ``--benchmark-json`` writes (checked against a real run below).
Timings are drawn from seeded log-normal distributions -- the shape of timing noise -- so the
tests are deterministic and never measure the machine they run on."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark", reason="needs pytest-benchmark (the test extra)")
from pytest_benchmark.stats import Stats  # noqa: E402

GATE = Path(__file__).resolve().parents[2] / "benchmarks" / "ab_gate.py"
_spec = importlib.util.spec_from_file_location("ab_gate", GATE)
gate = importlib.util.module_from_spec(_spec)
sys.modules["ab_gate"] = gate  # dataclasses look their module up there
_spec.loader.exec_module(gate)  # type: ignore[union-attr]

BENCHES = {"test_matmul": 2e-3, "test_conv[3x3]": 8e-3, "test_resnet18": 0.045}


def _doc(seed: int, slow: dict[str, float] | None = None, noise: float = 0.05,
         rounds: int = 60) -> dict:  # fmt: skip
    rng = np.random.default_rng(seed)
    benchmarks = []
    for name, mean in BENCHES.items():
        factor = (slow or {}).get(name, 1.0)
        stats = Stats()
        for t in mean * factor * rng.lognormal(0.0, noise, rounds):
            stats.update(float(t))
        benchmarks.append({
            "group": None, "name": name, "fullname": f"benchmarks/test_x.py::{name}",
            "params": None, "param": None, "extra_info": {}, "options": {},
            "stats": stats.as_dict(),
        })  # fmt: skip
    return {"machine_info": {}, "commit_info": {}, "benchmarks": benchmarks,
            "datetime": "2026-12-02T00:00:00", "version": "5.3.1"}  # fmt: skip


def _write(tmp_path: Path, name: str, doc: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GATE), *map(str, args)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_passes_on_noise(tmp_path: Path, seed: int) -> None:
    """Two runs of the same code (same distribution, other samples) pass, 20 seeds of them."""
    base, head = _doc(1000 + seed), _doc(2000 + seed)
    rows = gate.compare(gate.load_benchmarks(_write(tmp_path, "b.json", base)),
                        gate.load_benchmarks(_write(tmp_path, "h.json", head)))  # fmt: skip
    assert not any(r.fails for r in rows), gate.markdown(rows)


@pytest.mark.parametrize("seed", range(20))
def test_fails_on_a_planted_20_percent_regression(tmp_path: Path, seed: int) -> None:
    base, head = _doc(1000 + seed), _doc(2000 + seed, slow={"test_conv[3x3]": 1.2})
    rows = gate.compare(gate.load_benchmarks(_write(tmp_path, "b.json", base)),
                        gate.load_benchmarks(_write(tmp_path, "h.json", head)))  # fmt: skip
    verdicts = {r.name.rsplit("::")[-1]: r.verdict for r in rows}
    assert verdicts == {"test_conv[3x3]": "regression", "test_matmul": "ok",
                        "test_resnet18": "ok"}, verdicts  # fmt: skip


def test_command_line_exit_codes_and_table(tmp_path: Path) -> None:
    base = _write(tmp_path, "b.json", _doc(1))
    slow = _write(tmp_path, "h.json", _doc(2, slow={"test_resnet18": 1.2}))
    same = _write(tmp_path, "s.json", _doc(3))
    ok = _run(base, same)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "A/B benchmark gate: PASS" in ok.stdout
    bad = _run(base, slow, "--markdown", tmp_path / "summary.md")
    assert bad.returncode == 1
    assert "| **regression** |" in bad.stdout and "FAIL (1 of 3" in bad.stdout
    assert (tmp_path / "summary.md").read_text() == bad.stdout
    # A per-benchmark threshold of 25% lets the 20% slowdown through.
    t = _write(tmp_path, "t.json", {"*resnet18*": 0.25})
    assert _run(base, slow, "--thresholds", t).returncode == 0


def test_noise_guard_and_bounds(tmp_path: Path) -> None:
    noisy = _doc(2, noise=0.4, slow={"test_matmul": 1.2})
    base = gate.load_benchmarks(_write(tmp_path, "b.json", _doc(1, noise=0.4)))
    head = gate.load_benchmarks(_write(tmp_path, "h.json", noisy))
    row = {r.name.rsplit("::")[-1]: r for r in gate.compare(base, head)}["test_matmul"]
    assert row.ratio > 1.1 and row.verdict == "noisy" and not row.fails  # quartiles overlap
    few = gate.load_benchmarks(_write(tmp_path, "f.json", _doc(2, rounds=3)))
    assert {r.verdict for r in gate.compare(base, few)} == {"too few rounds"}
    assert _run(tmp_path / "b.json", tmp_path / "f.json", "--strict").returncode == 1


def test_missing_benchmark_fails_and_bad_input_is_refused(tmp_path: Path) -> None:
    base = _doc(1)
    head = copy.deepcopy(base)
    head["benchmarks"].pop()
    b, h = _write(tmp_path, "b.json", base), _write(tmp_path, "h.json", head)
    assert _run(b, h).returncode == 1
    assert _run(b, h, "--allow-missing").returncode == 0
    junk = tmp_path / "junk.json"
    junk.write_text('{"not": "benchmarks"}')
    out = _run(b, junk)
    assert out.returncode == 2 and "not pytest-benchmark output" in out.stderr
    assert "Traceback" not in out.stderr


def test_reads_what_pytest_benchmark_writes(tmp_path: Path) -> None:
    """A real ``--benchmark-json`` file parses; against itself it passes, against a copy with
    every timing twice as slow it fails (the 20% case is decided above on seeded samples: a
    real run's spread on a shared machine is not the gate's to test)."""
    (tmp_path / "test_tiny.py").write_text(
        "def test_sum(benchmark):\n    benchmark(sum, range(1000))\n"
    )
    out = tmp_path / "real.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path),
         f"--benchmark-json={out}", "--benchmark-min-rounds=20", "--benchmark-max-time=0.2"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _run(out, out).returncode == 0
    doc = json.loads(out.read_text())
    for b in doc["benchmarks"]:
        for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
            b["stats"][k] *= 2.0
    slow = _write(tmp_path, "slow.json", doc)
    proc = _run(out, slow)
    assert proc.returncode == 1 and "regression" in proc.stdout, proc.stdout
