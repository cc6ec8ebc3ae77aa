"""Fixtures for the CLI tests: a runner, a tiny model file, and one compiled artifact."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from cuvil_ref.cli.main import cli

TINY_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))


    def make():
        torch.manual_seed(0)
        return Tiny()


    def not_a_module():
        return 42
    """
)


def invoke(*args: str) -> Result:
    """Run ``cuvil ARGS`` in-process (stdout and stderr kept apart in the result).

    A wide terminal keeps rich tables from wrapping cells, so a row is one line.
    """
    return CliRunner(env={"COLUMNS": "250"}).invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny.py"
    path.write_text(TINY_MODEL, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def artifact(model_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tiny.py:make`` compiled for ``ref`` and saved (input f32[2,8])."""
    out = tmp_path_factory.mktemp("artifact") / "tiny.cuvilir"
    result = invoke("compile", f"{model_file}:make", "--input-shape", "2,8", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def x_npy(tmp_path: Path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32))
    return path
