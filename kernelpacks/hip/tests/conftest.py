"""Shared fixtures for the hip kernel-pack tests."""

from __future__ import annotations

import pytest
from cuvil_kernels_hip.source import KernelOptions


@pytest.fixture(params=[1, 2, 4, 8])
def unroll_options(request: pytest.FixtureRequest) -> KernelOptions:
    """Options for each supported loop_unroll_factor the tests sweep."""
    return KernelOptions(loop_unroll_factor=request.param)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "compile_check: compiles generated kernels with nvcc/hipcc (CI: -m compile_check)",
    )
