"""``cuvil targets`` and ``cuvil ops``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cuvil_ref.plugin import hookimpl
from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host
from tests.cli.conftest import invoke


class BrokenPack:
    """A pack whose target listing raises: the host records it, the CLI shows the error."""

    @hookimpl
    def cuvil_plugin_api_version(self) -> str:
        return "1.0"

    @hookimpl
    def cuvil_targets(self) -> list:
        raise RuntimeError("driver library libfoo.so not found")


@pytest.fixture
def broken_host() -> Iterator[PluginHost]:
    host = PluginHost()
    host.load_entry_points()
    host.register(BrokenPack(), PackRecord("foo", "foo_pack:BrokenPack", "0.3"))
    reset_host(host)
    yield host
    reset_host(None)


def test_targets_table_lists_ref_as_available() -> None:
    result = invoke("targets")
    assert result.exit_code == 0
    line = next(row for row in result.stdout.splitlines() if "│ ref " in row)
    assert "yes" in line and "numpy" in line


def test_targets_json_rows() -> None:
    rows = json.loads(invoke("targets", "--json").stdout)
    ref = next(r for r in rows if r["target"] == "ref")
    assert ref["available"] is True
    assert "numpy" in ref["aliases"] and "cpu" not in ref["aliases"]  # cpu is the cpu pack
    assert {"target", "pack", "version", "available", "device", "reason"} <= set(ref)


def test_broken_pack_is_shown_with_its_error(broken_host: PluginHost) -> None:
    result = invoke("targets")
    assert result.exit_code == 0
    assert "broken packs" in result.stdout
    line = next(row for row in result.stdout.splitlines() if "│ foo " in row)
    assert "RuntimeError: driver library libfoo.so not found" in line
    rows = json.loads(invoke("targets", "--json").stdout)
    foo = next(r for r in rows if r["pack"] == "foo")
    assert foo["target"] is None and "libfoo.so" in foo["error"]
    assert any(r["target"] == "ref" and r["available"] for r in rows)


def test_ops_by_category() -> None:
    rows = json.loads(invoke("ops", "--category", "pooling", "--json").stdout)
    names = {r["op"] for r in rows}
    assert "max_pool2d" in names and "relu" not in names
    assert all(r["category"] == "pooling" for r in rows)
    max_pool = next(r for r in rows if r["op"] == "max_pool2d")
    assert max_pool["signature"].startswith("max_pool2d(x) {kernel: ints")


def test_ops_table_and_unknown_category() -> None:
    assert "conv2d" in invoke("ops").stdout
    result = invoke("ops", "--category", "nope")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no op category 'nope'; categories: ")
    assert "pooling" in result.stderr
