"""The error policy: one red line, status 1 (2 for usage errors); tracebacks with --debug."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import invoke

REPO = Path(__file__).resolve().parents[2]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("done:")]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_missing_artifact(tmp_path: Path) -> None:
    result = invoke("inspect", str(tmp_path / "nope.cuvilir"))
    assert result.exit_code == 1
    assert "nope.cuvilir' does not exist" in one_error_line(result.stderr)
    assert "Traceback" not in result.output


def test_tampered_artifact(artifact: Path, tmp_path: Path, x_npy: Path) -> None:
    data = bytearray(artifact.read_bytes())
    data[-3] ^= 0x01  # a bit inside the last member's bytes
    bad = tmp_path / "bad.cuvilir"
    bad.write_bytes(bytes(data))
    for args in (("inspect", str(bad)), ("run", str(bad), "-i", str(x_npy)), ("verify", str(bad))):
        result = invoke(*args)
        assert result.exit_code == 1
        assert "was modified (sha256 mismatch)" in one_error_line(result.stderr)


def test_not_an_artifact(tmp_path: Path) -> None:
    junk = tmp_path / "junk.cuvilir"
    junk.write_bytes(b"hello, this is not a model at all; just some bytes" * 2)
    result = invoke("inspect", str(junk))
    assert result.exit_code == 1
    assert "is not a .cuvilir file" in one_error_line(result.stderr)


def test_unknown_target(artifact: Path, x_npy: Path) -> None:
    result = invoke("run", str(artifact), "-i", str(x_npy), "--target", "tpu-v9")
    assert result.exit_code == 1
    line = one_error_line(result.stderr)
    assert "unknown target 'tpu-v9'; installed targets: " in line and "ref" in line


def test_unwritable_output_is_an_os_error_line(artifact: Path, x_npy: Path, tmp_path: Path):
    result = invoke("run", str(artifact), "-i", str(x_npy), "-o", str(tmp_path / "no" / "y.npy"))
    assert result.exit_code == 1
    assert "No such file or directory" in one_error_line(result.stderr)


def test_usage_errors_exit_2(artifact: Path) -> None:
    assert invoke("run", str(artifact)).exit_code == 2  # --input is required
    assert invoke("compile").exit_code == 2
    assert invoke("no-such-command").exit_code == 2


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = invoke("--debug", "inspect", str(tmp_path / "nope.cuvilir"))
    assert result.exit_code == 1
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert "ArtifactFormatError: artifact file" in result.stderr


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "cuvil_ref.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_subprocess_targets_and_error_status(tmp_path: Path) -> None:
    ok = run_module("targets", "--json")
    assert ok.returncode == 0, ok.stderr
    assert any(r["target"] == "ref" for r in json.loads(ok.stdout))
    bad = run_module("inspect", str(tmp_path / "nope.cuvilir"))
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    debug = run_module("--debug", "inspect", str(tmp_path / "nope.cuvilir"))
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_repeated_input_shape_for_a_one_input_model(model_file: Path) -> None:
    result = invoke("compile", f"{model_file}:make", "--input-shape", "2,8", "--input-shape", "3,8")
    assert result.exit_code == 1
    line = one_error_line(result.stderr)
    assert "Tiny.forward(x) takes 1 input(s), but 2 input shapes" in line
    assert "one --input-shape per input" in line


def test_trusted_key_without_cryptography(
    artifact: Path, x_npy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "k.pub"
    key.write_bytes(b"\0" * 32)
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)  # `import cryptography` now fails
    for args in (
        ("verify", str(artifact), "--trusted-key", str(key)),
        ("run", str(artifact), "-i", str(x_npy), "--trusted-key", str(key)),
    ):
        result = invoke(*args)
        assert result.exit_code == 1
        assert "pip install 'cuvil-ref[sign]'" in one_error_line(result.stderr)
