"""Shared fixtures: a seeded generator, the spec reference module on the import path, and a
plugin host with the npu_sim pack registered."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def npu_host() -> Iterator[PluginHost]:
    """A plugin host with the npu_sim pack registered (in-process when it is not installed)."""
    from cuvil_kernels_npu_sim import plugin

    host = PluginHost()
    host.load_entry_points()
    if "npu-v3" not in host.target_names():
        host.register(plugin, PackRecord("npu_sim", "cuvil_kernels_npu_sim.plugin", "0.1.0"))
    reset_host(host)
    yield host
    reset_host(None)
