"""The hook implementations: target info, option validation, availability, support answers,
and that importing the pack never imports CuPy."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
from cuvil_kernels_hip import plugin

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.plugin.host import PackRecord, PluginHost
from cuvil_ref.plugin.target_spec import TargetSpec

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.fixture
def host() -> PluginHost:
    h = PluginHost()
    h.load_entry_points()
    if "hip" not in h.target_names():
        h.register(plugin, PackRecord("hip", "cuvil_kernels_hip.plugin", "test"))
    return h


def test_import_does_not_import_cupy() -> None:
    code = "import sys, cuvil_kernels_hip.plugin; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_target_info_and_aliases_resolve(host: PluginHost) -> None:
    assert plugin.cuvil_targets()[0].name == "hip"
    for alias in ("amd/hiprtc", "amd/rocm", "cupy"):
        assert host.resolve(alias).name == "hip"
    spec = host.resolve({"target": "cupy", "options": {"loop_unroll_factor": 8}})
    assert dict(spec.options) == {"loop_unroll_factor": 8, "block_size": 256, "use_graph": True}
    assert spec.arch == "hip"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"loop_unroll_factor": 3}, "'loop_unroll_factor' = 3 is not one of [1, 2, 4, 8, 16]"),
        ({"block_size": 100}, "'block_size' = 100 is not one of"),
        ({"use_graph": "yes"}, "'use_graph' must be bool"),
        ({"tile": 4}, "has no option 'tile'; accepted options: block_size"),
    ],
)
def test_invalid_options_are_rejected_clearly(
    host: PluginHost, options: dict, message: str
) -> None:
    with pytest.raises(TargetError, match="target 'hip'") as info:
        host.resolve({"target": "hip", "options": options})
    assert message in str(info.value)


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_unavailable_without_cupy_and_lowering_refuses(host: PluginHost) -> None:
    spec = host.resolve("hip")
    avail = host.availability(spec)
    assert not avail.available and "CuPy is not installed" in avail.reason
    b = GraphBuilder()
    graph = b.build([b.op("relu", [b.input("x", TensorType((4,), DType.f32))])])
    with pytest.raises(TargetError, match="not available on this machine: CuPy is not installed"):
        plugin.cuvil_lower_partition(target=spec, graph=graph, options={})


def test_hooks_ignore_other_targets() -> None:
    other = TargetSpec("ref")
    b = GraphBuilder()
    graph = b.build([b.op("relu", [b.input("x", TensorType((4,), DType.f32))])])
    assert plugin.cuvil_target_available(target=other) is None
    assert plugin.cuvil_supports_node(target=other, node=graph.nodes[0], graph=graph) is None
    assert plugin.cuvil_lower_partition(target=other, graph=graph, options={}) is None
    assert plugin.cuvil_validate_options(target=other, options={}) is None
    assert plugin.cuvil_preferences(target=TargetSpec("hip")).layout == "NCHW"


def test_supports_node_answers_with_reasons() -> None:
    spec = TargetSpec("hip")
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 4), DType.f32))
    m = b.input("m", TensorType((2, 4), DType.f32))
    keep = b.op("maximum", [x, m])
    sorted_ = b.op("var", [keep], {"axes": (1,)})
    graph = b.build([sorted_])
    assert plugin.cuvil_supports_node(target=spec, node=graph.nodes[0], graph=graph).supported
    answer = plugin.cuvil_supports_node(target=spec, node=graph.nodes[1], graph=graph)
    assert not answer.supported and "op 'var' has no hip lowering" in answer.reason


def test_broadcast_constant_operand_is_materialized_once() -> None:
    from cuvil_kernels_hip.lowered_sources import plan_graph

    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3), DType.f16))
    c = b.constant("c", np.array([1.0, 2.0, 3.0], np.float16))
    graph = b.build([b.op("sub", [c, x])])
    assert plugin.cuvil_supports_node(target=TargetSpec("hip"), node=graph.nodes[0], graph=graph)
    plan = plan_graph(graph)
    wide = next(v for k, v in plan.constants.items() if k.endswith("bcast0"))
    np.testing.assert_array_equal(wide, np.broadcast_to(graph.constants["c"], (2, 3)))
    assert plan.launches[0].args[:2] == (next(k for k in plan.constants if "bcast0" in k), "x")
