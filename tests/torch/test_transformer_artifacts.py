"""A real transformer (0-d constants, ModelOutput, keyword inputs) hits the compile cache on the
second compile, and its saved artifact reloads and gives the same outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import cuvil_ref as cuvil
from tests.frontend.corpus.models import BY_NAME


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUVIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUVIL_CACHE", raising=False)


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_transformer_hits_the_cache_and_reloads(name: str, tmp_path: Path) -> None:
    entry = BY_NAME[name]
    model = entry.build()
    args, kwargs = entry.inputs(0)
    first = cuvil.torch.compile(model, example_inputs=args, example_kwargs=kwargs or None)
    assert first.report()["cache"]["hit"] is False
    second = cuvil.torch.compile(model, example_inputs=args, example_kwargs=kwargs or None)
    assert second.report()["cache"]["hit"] is True
    path = tmp_path / f"{name}.cuvilir"
    second.save(str(path))
    loaded = cuvil.load(str(path))
    assert str(loaded) == str(second.module)
    (x,) = args
    want = second(x).last_hidden_state
    got = cuvil.interpret(loaded, [x.numpy()])[0]
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=0, atol=0)
