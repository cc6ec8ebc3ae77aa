"""The executable: plans built once, launches replayed, async runs, metrics, symbolic batch."""

from __future__ import annotations

import numpy as np
from cuvil_kernels_cuda import plugin
from cuvil_kernels_cuda.kernels import common

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ir.types import TensorType
from cuvil_ref.plugin.target_spec import TargetSpec

CUDA = TargetSpec("cuda")


def _graph(batch: int | str = 2) -> Graph:
    b = GraphBuilder()
    x = b.input("x", TensorType((batch, 4), DType.f32))
    w = b.constant("w", np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    y = b.op("linear", [x, w])
    return b.build([b.op("relu", [b.op("add", [y, y])])])


def test_launches_are_recorded_once_and_replayed(rng: np.random.Generator) -> None:
    exe = plugin.cuvil_lower_partition(CUDA, _graph(), {"use_cuda_graph": True})
    with common.recording() as log:  # nothing may be re-emitted at run time
        for _ in range(2):
            x = rng.standard_normal((2, 4)).astype(np.float32)
            got = exe.run([x])[0]
            np.testing.assert_allclose(got, interpret(_graph(), [x])[0], rtol=1e-6, atol=1e-6)
    assert log == []
    m = exe.metrics()
    assert m["runs"] == 2 and m["launches_per_run"] == 3 and m["plans"] == 1
    assert m["cuda_graph"] == "unsupported in simulator"
    assert m["bytes_h2d"] == 2 * 32 and m["bytes_d2h"] == 2 * 24
    assert m["host_launch_overhead_s"] > 0


def test_run_async_completes_after_sync(rng: np.random.Generator) -> None:
    exe = plugin.cuvil_lower_partition(CUDA, _graph(), {})
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(3)]
    futures = [exe.run_async([x]) for x in xs]
    for x, f in zip(xs, futures, strict=True):
        np.testing.assert_allclose(f.result(timeout=60)[0], interpret(_graph(), [x])[0], rtol=1e-6)


def test_symbolic_batch_builds_one_plan_per_shape(rng: np.random.Generator) -> None:
    g = _graph("batch")
    exe = plugin.cuvil_lower_partition(CUDA, g, {})
    assert exe.metrics()["plans"] == 0
    for n in (1, 3, 1):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(exe.run([x])[0], interpret(g, [x])[0], rtol=1e-6, atol=1e-6)
    assert exe.metrics()["plans"] == 2
