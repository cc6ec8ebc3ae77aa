"""The executable: arena from the memory plan, NHWC storage, run_async, concurrent callers,
symbolic shapes, the per-layer table, and kernels that cannot hold the GIL."""

from __future__ import annotations

import threading

import numpy as np
import torch
from cuvil_kernels_cpu.executable import CpuExecutable

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import get_model


def _resnet(size: int = 32, **kw: object) -> tuple[object, np.ndarray]:
    model, _ = get_model("resnet18")
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    module = torch_to_cuvilir(model, example_inputs=(x,), **kw)
    return module, x.numpy()


def _cpu_executable(program: object) -> CpuExecutable:
    exes = [lp.executable for lp in program.lowered if isinstance(lp.executable, CpuExecutable)]
    assert len(exes) == 1
    return exes[0]


def test_nchw_graph_runs_nhwc_with_two_transposes_and_the_planned_arena() -> None:
    module, x = _resnet(64)
    program = compile_module(module, "cpu", opt_level=2, cache=False)  # NCHW IR
    want = compile_module(module, "ref", opt_level=2, cache=False).run([x])[0]
    got = program.run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    m = program.report()["metrics"]
    assert m["algorithms"].get("to_nhwc") == 1 and m["algorithms"].get("to_nchw") == 1
    arena = m["arena"]
    assert arena["values_at_planned_offsets"] >= 20
    assert arena["arena_bytes"] <= 2 * arena["planned_arena_bytes"]
    algorithms = {r["algorithm"] for r in m["layers"]}
    # which 3x3 algorithms the cost model picks depends on the CPU's profile (algo.py)
    assert "gemm" in algorithms and algorithms & {"winograd", "im2col", "direct"}
    assert all(r["ms"] > 0 for r in m["layers"])
    assert set(m["choices"]) and all("why" in c for c in m["choices"].values())


def test_run_async_and_concurrent_callers_get_their_own_arena() -> None:
    module, x = _resnet()
    program = compile_module(module, "cpu", opt_level=3, cache=False, options={"threads": 1})
    exe = _cpu_executable(program)
    want = program.run([x])[0]
    xs = [x * (i + 1) for i in range(4)]
    wants = [program.run([xi])[0] for xi in xs]
    futures = [program.run_async([xi]) for xi in xs]
    for f, w in zip(futures, wants, strict=True):
        np.testing.assert_array_equal(f.result(timeout=60)[0], w)
    results: dict[int, np.ndarray] = {}

    def worker(i: int) -> None:
        for _ in range(3):
            results[i] = program.run([xs[i]])[0]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for i in range(4):
        np.testing.assert_array_equal(results[i], wants[i])
    assert exe.metrics()["arena_instances"] >= 1
    np.testing.assert_array_equal(program.run([x])[0], want)


def test_every_kernel_is_compiled_nogil() -> None:
    """A kernel holding the GIL is a bug: every step is a nogil Numba kernel or a numpy call."""
    from numba.core.registry import CPUDispatcher

    module, x = _resnet()
    program = compile_module(module, "cpu", opt_level=3, cache=False)
    exe = _cpu_executable(program)
    comp = next(iter(exe._compiled.values()))
    for step in comp.program.steps:
        if isinstance(step.fn, CPUDispatcher):
            assert step.fn.targetoptions.get("nogil") is True, step.node
        else:
            assert step.fn.__module__.startswith("cuvil_kernels_cpu.lowering"), step.fn


def test_symbolic_batch_builds_one_program_per_shape() -> None:
    model, shape = get_model("mlp")
    x = torch.randn(3, *shape[1:])
    cm = cuvil.torch.compile(model, target="cpu", example_inputs=(x,), dynamic_batch=True)
    for n in (1, 3, 5):
        xi = torch.randn(n, *shape[1:])
        np.testing.assert_allclose(
            cm(xi).detach().numpy(), model(xi).detach().numpy(), rtol=1e-4, atol=1e-5
        )
    assert cm.report()["metrics"]["signatures"] >= 2


def test_a_kernel_failure_names_the_node() -> None:
    import pytest

    from cuvil_ref.errors import CuvilError

    model, shape = get_model("mlp")
    program = compile_module(
        torch_to_cuvilir(model, example_inputs=(torch.randn(2, *shape[1:]),)), "cpu", cache=False
    )
    with pytest.raises(CuvilError, match="x"):
        program.run([np.zeros((2, shape[1] + 1), np.float32)])
