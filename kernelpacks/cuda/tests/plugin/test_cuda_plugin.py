"""The pack's hooks: target info, options, availability both ways, node support reasons."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from cuvil_kernels_cuda import plugin
from cuvil_kernels_cuda.lowering import LOWERINGS

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Node
from cuvil_ref.ir.types import TensorType
from cuvil_ref.plugin.host import get_host
from cuvil_ref.plugin.target_spec import TargetSpec

CUDA = TargetSpec("cuda")


def _node(op: str, dtype: DType = DType.f32, attrs: dict | None = None, shape=(1, 2, 5, 5)) -> Node:
    b = GraphBuilder()
    x = b.input("x", TensorType(shape, dtype))
    y = b.op(op, [x], attrs or {})
    return b.build([y]).nodes[0]


def test_target_info_and_aliases_resolve() -> None:
    (info,) = plugin.cuvil_targets()
    assert info.name == "cuda" and info.arch == "cuda" and "sm_90" in info.features
    host = get_host()
    for alias in ("nvidia/nvrtc", "gpu"):
        assert host.resolve(alias).name == "cuda"
    spec = host.resolve({"target": "nvidia/nvrtc", "arch": "cuda", "options": {"tile": 16}})
    assert spec.options["tile"] == 16 and spec.options["loop_unroll_factor"] == 1


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"loop_unroll_factor": 17}, "loop_unroll_factor"),
        ({"tile": 12}, "tile"),
        ({"use_cuda_graph": "yes"}, "use_cuda_graph"),
        ({"warp_size": 64}, "no option 'warp_size'"),
    ],
)
def test_invalid_options_are_named(options: dict, match: str) -> None:
    with pytest.raises(TargetError, match=match):
        plugin.cuvil_validate_options(CUDA, options)


def test_hooks_ignore_other_targets() -> None:
    other = TargetSpec("ref")
    assert plugin.cuvil_target_available(other) is None
    assert plugin.cuvil_validate_options(other, {}) is None
    assert plugin.cuvil_supports_node(other, _node("relu"), None) is None


def test_available_in_simulator() -> None:
    avail = plugin.cuvil_target_available(CUDA)
    assert avail.available and avail.device == "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"


def test_unavailable_without_gpu_or_simulator() -> None:
    # numba.cuda fixes simulator mode at import, so the other way round needs a fresh process.
    code = (
        "from cuvil_kernels_cuda import plugin; from cuvil_ref.plugin.target_spec import "
        "TargetSpec; a = plugin.cuvil_target_available(TargetSpec('cuda')); "
        "print(a.available, '|', a.reason)"
    )
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False |") and "NUMBA_ENABLE_CUDASIM" in out.stdout


def test_plugin_import_is_light() -> None:
    code = "import sys, cuvil_kernels_cuda.plugin; print('numba.cuda' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize(
    ("op", "dtype", "attrs", "reason"),
    [
        ("relu", DType.bf16, {}, "dtype bf16 not supported"),
        ("relu", DType.i32, {}, "dtype i32 of %x is not supported"),
        ("pad", DType.f32, {"pads": (-1, 0)}, "negative pads"),
        ("max_pool2d", DType.f32, {"kernel": (3, 3), "padding": (0, 1, 1, 1)}, "asymmetric"),
        ("gelu", DType.f32, {"approximate": "tanh"}, "approximate='tanh'"),
        ("elu", DType.f32, {}, "no cuda lowering"),
    ],
)
def test_declines_with_precise_reasons(op: str, dtype: DType, attrs: dict, reason: str) -> None:
    answer = plugin.cuvil_supports_node(CUDA, _node(op, dtype, attrs), None)
    assert not answer.supported and reason in answer.reason


def test_claims_what_it_lowers() -> None:
    assert plugin.cuvil_supports_node(CUDA, _node("relu"), None).supported
    pool = _node("max_pool2d", attrs={"kernel": (3, 3), "padding": (1, 1)})
    assert plugin.cuvil_supports_node(CUDA, pool, None).supported
    no_fp16 = TargetSpec("cuda", options=FrozenDict({"fp16": False}))
    answer = plugin.cuvil_supports_node(no_fp16, _node("relu", DType.f16), None)
    assert not answer.supported and "fp16=False" in answer.reason
    assert {"conv2d", "linear", "qconv2d", "qlinear", "quantize"} <= set(LOWERINGS)


def test_supports_matches_interpreter_on_a_claimed_node(rng: np.random.Generator) -> None:
    from cuvil_ref.interpreter import interpret

    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3), DType.f32))
    g = b.build([b.op("hardtanh", [x], {"min_val": -0.5, "max_val": 0.5})])
    exe = plugin.cuvil_lower_partition(CUDA, g, {})
    xin = rng.standard_normal((2, 3)).astype(np.float32)
    assert np.array_equal(exe.run([xin])[0], interpret(g, [xin])[0])
