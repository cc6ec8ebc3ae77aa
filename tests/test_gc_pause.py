"""The collector pause around compiles (cuvil_ref/gc_pause.py)."""

from __future__ import annotations

import gc
import threading

import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.gc_pause import gc_paused, without_gc


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_pauses_and_restores():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restores_after_an_exception():
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_nested_pauses_resume_at_the_outermost():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_env_opt_out(monkeypatch):
    monkeypatch.setenv("CUVIL_GC_DURING_COMPILE", "1")
    with gc_paused():
        assert gc.isenabled()


def test_concurrent_pauses_resume_when_the_last_ends():
    inside, release = threading.Barrier(2), threading.Event()

    def hold():
        with gc_paused():
            inside.wait(5)
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    with gc_paused():
        inside.wait(5)
    assert not gc.isenabled()  # the thread's compile is still running
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_decorator_keeps_the_function():
    @without_gc
    def f(x: int) -> bool:
        return x == 1 and not gc.isenabled()

    assert f(1) and f.__name__ == "f" and gc.isenabled()


def test_capture_and_compile_run_with_the_collector_paused(monkeypatch):
    import cuvil_ref.lowering.compiler as compiler

    states: dict[str, bool] = {}
    real_export, real_compile = torch.export.export, compiler.compile_module

    def export(*a, **k):
        states["export"] = gc.isenabled()
        return real_export(*a, **k)

    def compile_module(*a, **k):
        states["compile_module"] = gc.isenabled()
        return real_compile(*a, **k)

    monkeypatch.setattr(torch.export, "export", export)
    monkeypatch.setattr(compiler, "compile_module", compile_module)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    cm = cuvil.torch.compile(model, example_inputs=(torch.randn(2, 4),), cache=False)
    assert states == {"export": False, "compile_module": False} and gc.isenabled()
    x = torch.randn(2, 4)
    torch.testing.assert_close(torch.as_tensor(cm(x)), model(x))
