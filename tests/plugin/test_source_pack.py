"""use_source_pack: a pack run from a source tree, with no entry points (the GPU machines)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cuvil_ref.errors import TargetError
from cuvil_ref.plugin import host as host_module
from cuvil_ref.plugin.host import get_host, reset_host
from cuvil_ref.plugin.source_pack import SOURCE_TREE_VERSION, use_source_pack


@pytest.fixture
def no_entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As on a machine where nothing was pip-installed."""
    monkeypatch.setattr(host_module.md, "entry_points", lambda **_: [])
    yield
    reset_host(None)


def test_registers_the_pack_from_its_module(no_entry_points: None) -> None:
    host = use_source_pack("cpu", "cuvil_kernels_cpu.plugin")
    assert get_host() is host
    assert host.resolve("cpu").name == "cpu"
    assert host.pack_of("cpu").version == SOURCE_TREE_VERSION
    assert "ref" in host.target_names()


def test_installed_pack_is_kept() -> None:
    try:
        host = use_source_pack("cpu", "cuvil_kernels_cpu.plugin")
        assert host.pack_of("cpu").version != SOURCE_TREE_VERSION
    finally:
        reset_host(None)


def test_module_that_does_not_import(no_entry_points: None) -> None:
    with pytest.raises(TargetError, match="PYTHONPATH"):
        use_source_pack("cuda", "no_such_pack.plugin")


def test_module_without_the_target(no_entry_points: None) -> None:
    with pytest.raises(TargetError, match="does not provide it"):
        use_source_pack("npu-v9", "cuvil_kernels_cpu.plugin")
