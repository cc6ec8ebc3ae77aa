"""scripts/gpu_bench.py --dry-run plans ResNet-18 for the hip target and writes JSON + Markdown
without a GPU; a failing measurement is recorded, not raised."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_bench.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_dry_run_writes_plans(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from cuvil_ref.plugin import host as host_mod

    previous = host_mod._HOST
    try:
        assert _load().main(["--dry-run", "--out", str(tmp_path), "--models", "resnet18"]) == 0
    finally:
        host_mod.reset_host(previous)
    result = json.loads((tmp_path / "hip_gpu_check.json").read_text())
    (row,) = result["plans"]
    assert "plan_error" not in row, row
    # one launch per node, except the flatten: a view sharing its input's bytes in the plan
    assert row["declined"] == [] and row["launches"] == row["nodes"] - 1 > 10
    assert {"conv2d", "gemm", "pool2d"} <= set(row["families"])
    assert "| resnet18 |" in (tmp_path / "hip_gpu_check.md").read_text()


def test_attempt_records_errors() -> None:
    row: dict = {}
    assert _load().attempt(row, "x", lambda: 1 / 0) is None
    assert row["x_error"].startswith("ZeroDivisionError")
