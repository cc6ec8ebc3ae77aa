"""scripts/compile_check.py: a filtered run passes; a missing compiler fails unless allowed."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compile_check.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compile_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_filtered_run_prints_table_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    rc = _load().main(
        ["--arch", "sm_80", "--filter", "qpool2d(max", "--jobs", "1", "--registry-only"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "qpool2d(max, unroll=4)" in out and " ok " in out and "0 failed" in out


def test_missing_compiler_fails_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc, no hipcc
    module = _load()
    assert module.main(["--arch", "sm_80", "--filter", "qpool2d(max", "--registry-only"]) == 2
    assert "nvcc is not on PATH" in capsys.readouterr().out
    assert (
        module.main(
            ["--arch", "sm_80", "--filter", "qpool2d(max", "--allow-missing", "--registry-only"]
        )
        == 0
    )
    assert "SKIP sm_80: nvcc is not on PATH" in capsys.readouterr().out
