"""The device layer: lazy import, availability, arena views, bound launches, graph support."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from cuvil_kernels_cuda import availability, device
from cuvil_kernels_cuda.kernels import elementwise as ew
from numba import cuda


def test_import_does_not_load_numba_cuda() -> None:
    code = "import sys, cuvil_kernels_cuda; print('numba.cuda' in sys.modules)"
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "False"


def test_availability_in_simulator() -> None:
    assert availability() == (True, "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")


def test_availability_without_gpu_or_simulator() -> None:
    code = "from cuvil_kernels_cuda import availability; print(availability())"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.startswith("(False, ") and "NUMBA_ENABLE_CUDASIM" in out.stdout


def test_arena_views_share_memory_and_check_bounds() -> None:
    pool = device.BufferPool(slot_nbytes=[16], arena_nbytes=1024)
    a = pool.view(device.Slot(0, (2, 3), "float32"))
    b = pool.view(device.Slot(256, (4,), "int8"))
    ew.unary("relu", np.array([[-1, 2, -3], [4, -5, 6]], np.float32), out=a)
    assert np.array_equal(a.copy_to_host(), [[0, 2, 0], [4, 0, 6]])
    raw = pool.arena.copy_to_host()
    assert np.array_equal(raw[:24].view(np.float32), [0, 2, 0, 4, 0, 6])
    assert b.shape == (4,) and pool.buffer(0, (4,), "float32").shape == (4,)
    with pytest.raises(ValueError, match="overruns"):
        pool.view(device.Slot(1000, (8,), "float32"))
    with pytest.raises(ValueError, match="aligned"):
        pool.view(device.Slot(2, (1,), "float32"))


@cuda.jit
def _inc(x):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def test_bound_launch_replays_on_context_stream() -> None:
    ctx = device.ExecutionContext()
    buf = cuda.to_device(np.zeros(5, np.int32))
    launch = device.bind(_inc, (1,), (8,), (buf,), ctx)
    launch.launch()
    launch.launch()
    ctx.synchronize()
    assert np.array_equal(buf.copy_to_host(), [2] * 5)


def test_graph_capture_reports_unsupported_in_simulator() -> None:
    ok, why = device.graph_support()
    assert not ok and why.startswith("unsupported")
    with pytest.raises(RuntimeError, match="unsupported"):
        device.GraphCapture(device.ExecutionContext())
