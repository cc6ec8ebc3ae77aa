"""Benchmarks (pytest-benchmark). Not part of the test run; run them with

    python -m pytest benchmarks -p no:cacheprovider --benchmark-only \
        --benchmark-json=out/bench.json && python benchmarks/summarize.py out/bench.json

Every figure is a ratio against its comparison measured in the same run (same group). Torch and
numpy use the machine's default thread counts. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("CUVIL_CACHE", "0")  # measure cold compiles unless a test says otherwise
os.environ.setdefault("CUVIL_CACHE_DIR", tempfile.mkdtemp(prefix="cuvil-bench-cache-"))


@pytest.fixture(scope="session")
def torch_mod():
    torch = pytest.importorskip("torch")
    torch.set_grad_enabled(False)
    return torch
