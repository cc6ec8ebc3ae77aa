from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host  # noqa: E402


@pytest.fixture
def host() -> Iterator[PluginHost]:
    """A fresh host with the installed packs plus the toy packs, installed process-wide."""
    import toy_packs

    h = PluginHost()
    h.load_entry_points()
    h.register(toy_packs.ToyPack(), PackRecord("toy", "toy_packs:ToyPack", "9.9"))
    h.register(toy_packs.BrokenTargetsPack(), PackRecord("broken", "toy_packs:Broken", "0.0"))
    h.register(toy_packs.FuturePack(), PackRecord("future", "toy_packs:FuturePack", "2.0"))
    h.register(toy_packs.UnavailablePack(), PackRecord("gpux", "toy_packs:Unavailable", "1.0"))
    reset_host(h)
    yield h
    reset_host(None)
