"""``cuvil run`` and ``cuvil bench``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cuvil_ref as cuvil
from tests.cli.conftest import invoke


def test_run_saves_the_interpreter_outputs(artifact: Path, x_npy: Path, tmp_path: Path) -> None:
    out = tmp_path / "y.npy"
    result = invoke("run", str(artifact), "--input", str(x_npy), "-o", str(out))
    assert result.exit_code == 0, result.output
    want = cuvil.interpret(cuvil.load(str(artifact)), [np.load(x_npy)])[0]
    np.testing.assert_array_equal(np.load(out), want)
    row = next(r for r in result.stdout.splitlines() if r.startswith("│ 0 "))
    assert "2, 4" in row and "float32" in row
    assert f"{float(want.max()):.4g}" in row


def test_run_npz_output_keyed_by_value_name(artifact: Path, x_npy: Path, tmp_path: Path) -> None:
    out = tmp_path / "y.npz"
    assert invoke("run", str(artifact), "-i", str(x_npy), "-o", str(out)).exit_code == 0
    names = [v.name for v in cuvil.load(str(artifact)).outputs]
    with np.load(out) as data:
        assert data.files == names


def test_run_refuses_wrong_inputs(artifact: Path, x_npy: Path, tmp_path: Path) -> None:
    two = invoke("run", str(artifact), "-i", str(x_npy), "-i", str(x_npy))
    assert two.exit_code == 1
    assert "takes 1 input(s) (%x: f32[2,8]); the --input files hold 2 array(s)" in two.stderr
    wrong = tmp_path / "w.npy"
    np.save(wrong, np.zeros((3, 8), np.float32))
    bad = invoke("run", str(artifact), "-i", str(wrong))
    assert bad.exit_code == 1
    assert "input %x: expected shape [2,8], got [3, 8]" in bad.stderr
    missing = invoke("run", str(artifact), "-i", str(tmp_path / "nope.npy"))
    assert missing.exit_code == 1 and "does not exist" in missing.stderr


def test_bench_artifact_json(artifact: Path) -> None:
    result = invoke("bench", str(artifact), "--warmup", "1", "--iters", "4", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["target"] == "ref"
    (stats,) = data["results"].values()
    assert stats["iters"] == 4
    assert 0 < stats["p50_ms"] <= stats["p90_ms"] <= stats["p99_ms"]


def test_bench_model_compares_with_torch_eager(model_file: Path) -> None:
    result = invoke(
        "bench", f"{model_file}:make", "--input-shape", "2,8", "--warmup", "0", "--iters", "2"
    )
    assert result.exit_code == 0, result.output
    assert "│ cuvil (ref) " in result.stdout and "│ torch eager " in result.stdout


def test_bench_symbolic_artifact_takes_input_shape(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "dyn.cuvilir"
    args = ("--input-shape", "2,8", "--dynamic-batch", "-o", str(out))
    assert invoke("compile", f"{model_file}:make", *args).exit_code == 0
    ok = invoke("bench", str(out), "--input-shape", "5,8", "--iters", "1", "--json")
    assert ok.exit_code == 0, ok.output
    bad = invoke("bench", str(out), "--input-shape", "5,9", "--iters", "1")
    assert bad.exit_code == 1
    assert "--input-shape 5,9 does not fit input %x of type f32[batch,8]" in bad.stderr


@pytest.mark.parametrize("seconds", [[0.001] * 3, [0.001, 0.002, 0.010]])
def test_latency_stats(seconds: list[float]) -> None:
    from cuvil_ref.cli.bench_cmd import latency_stats

    s = latency_stats(seconds)
    assert s["p50_ms"] == pytest.approx(1e3 * float(np.median(seconds)))
    assert s["mean_ms"] == pytest.approx(1e3 * float(np.mean(seconds)))
    assert s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= 1e3 * max(seconds)


def test_bench_per_layer_says_when_the_target_records_no_timings(artifact: Path) -> None:
    result = invoke("bench", str(artifact), "--iters", "1", "--per-layer")
    assert result.exit_code == 0, result.output
    assert "target 'ref' records no per-layer timings" in result.stdout
    data = json.loads(invoke("bench", str(artifact), "--iters", "1", "--per-layer",
                             "--json").stdout)  # fmt: skip
    assert data["layers"] == []
