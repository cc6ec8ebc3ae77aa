"""Kernels the lowering emits for a small representative graph compile with nvcc (sm_80, sm_90)
and hipcc (gfx90a). The full matrix is ``scripts/compile_check.py``; CI runs this subset with
``pytest -m compile_check``."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from cuvil_kernels_hip.lowered_sources import plan_graph
from cuvil_kernels_hip.offline_compile import compile_source, compiler_for
from cuvil_kernels_hip.source import KernelSource

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType

pytestmark = pytest.mark.compile_check


def _graph_sources() -> list[KernelSource]:
    """fp16 conv+residual, pool, layer_norm, GELU linear (WMMA), and an int8 qconv/qavg chain."""
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 16, 8, 8), DType.f16))
    w = b.constant("w", rng.standard_normal((16, 16, 3, 3)).astype(np.float16))
    bias = b.constant("b", np.zeros(16, np.float16))
    y = b.op(
        "fused_conv2d",
        [x, w, bias, x],
        {"padding": (1, 1, 1, 1), "activation": "relu", "has_residual": True},
    )
    p = b.op("avg_pool2d", [y], {"kernel": (2, 2)})
    f = b.op("reshape", [p], {"shape": (16, 16)})
    n = b.op("layer_norm", [f], {"normalized_shape": (16,)})
    lw = b.constant("lw", rng.standard_normal((16, 16)).astype(np.float16))
    lb = b.constant("lb", np.zeros(16, np.float16))
    z = b.op("fused_linear", [n, lw, lb], {"activation": "gelu"})
    q = b.op("quantize", [z], {"scale": (0.05,), "zero_point": (3,)})
    qattrs = {"multiplier": (1 << 30,) * 4, "shift": (31,) * 4, "out_scale": 0.1, "x_zp": 3}
    q4 = b.op("reshape", [q], {"shape": (1, 16, 4, 4)})
    qw = b.constant("qw", rng.integers(-127, 128, (4, 16, 1, 1), dtype=np.int8))
    qc = b.op("qconv2d", [q4, qw], qattrs)
    pool = {"kernel": (2, 2), "stride": (2, 2), "multiplier": (1 << 30,) * 4}
    qp = b.op("qavg_pool2d", [qc], {**pool, "shift": (31,) * 4, "out_scale": 0.1})
    graph = b.build([b.op("dequantize", [qp], {"scale": (0.1,), "zero_point": (0,)})])
    sources: dict[str, KernelSource] = {}
    for features in ((), ("tensor_core", "sm_90")):
        for src in plan_graph(graph, {"loop_unroll_factor": 2}, features).sources:
            sources.setdefault(src.sha256, src)
    return list(sources.values())


def test_subset_covers_float_wmma_and_int8_families() -> None:
    families = {s.family for s in _graph_sources()}
    assert {"conv2d", "pool2d", "normalization", "gemm", "qconv2d", "qpool2d"} <= families
    assert any("wmma::" in s.code for s in _graph_sources())


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "gfx90a"])
def test_lowered_subset_compiles(arch: str) -> None:
    if shutil.which(compiler_for(arch)) is None:
        pytest.skip(f"{compiler_for(arch)} is not on PATH; cannot compile for {arch}")
    sources = _graph_sources()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s.code, arch), sources))
    for src, res in zip(sources, results, strict=True):
        assert res.ok, f"{src.family} {src.entry} on {arch}:\n{res.log[:3000]}"
