"""Compile cache: miss then hit, keys that change with what matters, corrupt entries recompiled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cuvil_ref as cuvil
from cuvil_ref import cache
from cuvil_ref.ir import GraphBuilder, Module, TensorType
from cuvil_ref.lowering.compiler import compile_module


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUVIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUVIL_CACHE", raising=False)


def _module(scale: float = 1.0) -> Module:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 4)))
    w = b.constant("w", np.full((3, 4), scale, np.float32))
    return Module(b.build([b.op("relu", [b.op("linear", [x, w])])]))


def test_miss_then_hit() -> None:
    m = _module()
    first = compile_module(m, "ref", opt_level=1)
    assert first.report()["cache"]["hit"] is False
    second = compile_module(m, "ref", opt_level=1)
    rep = second.report()["cache"]
    assert rep["hit"] is True and rep["key"] == first.report()["cache"]["key"]
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(second.run([x])[0], cuvil.interpret(m, [x])[0])


def test_key_changes_with_weights_options_and_target_options() -> None:
    k1 = compile_module(_module(1.0), "ref", opt_level=1).report()["cache"]["key"]
    k2 = compile_module(_module(2.0), "ref", opt_level=1).report()["cache"]["key"]
    k3 = compile_module(_module(1.0), "ref", opt_level=2).report()["cache"]["key"]
    assert len({k1, k2, k3}) == 3


def test_corrupt_entry_is_discarded_and_recompiled(tmp_path: Path) -> None:
    m = _module()
    key = compile_module(m, "ref", opt_level=1).report()["cache"]["key"]
    art = tmp_path / "cache" / "compile" / f"{key}.cuvilir"
    data = bytearray(art.read_bytes())
    data[len(data) // 2] ^= 0xFF
    art.write_bytes(bytes(data))
    before = cache.STATS.corrupt
    with pytest.warns(UserWarning, match="discarding corrupt compile-cache entry"):
        again = compile_module(m, "ref", opt_level=1)
    assert again.report()["cache"]["hit"] is False
    assert cache.STATS.corrupt == before + 1
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(again.run([x])[0], cuvil.interpret(m, [x])[0])
    assert compile_module(m, "ref", opt_level=1).report()["cache"]["hit"] is True


def test_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUVIL_CACHE", "0")
    rep = compile_module(_module(), "ref").report()["cache"]
    assert rep["enabled"] is False and rep["key"] is None
