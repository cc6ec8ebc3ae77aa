"""The pack as the host sees it: target, aliases, options, node support."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu import plugin
from helpers import one_op

from cuvil_ref.errors import TargetError
from cuvil_ref.plugin.host import PluginHost


@pytest.fixture
def host() -> PluginHost:
    h = PluginHost()
    h.load_entry_points()
    return h


def test_cpu_target_is_the_pack_and_ref_gave_up_the_alias(host: PluginHost) -> None:
    assert host.pack_of("cpu").name == "cpu"
    assert host.resolve("cpu").name == "cpu"
    assert "cpu" not in host.info("ref").aliases
    avail = host.availability(host.resolve("cpu"))
    assert avail.available and "tile" in avail.device


def test_options_are_validated_with_clear_errors(host: PluginHost) -> None:
    spec = host.resolve({"target": "cpu", "options": {"threads": 1}})
    assert spec.options["threads"] == 1 and spec.options["conv_algorithm"] == "auto"
    with pytest.raises(TargetError, match="conv_algorithm"):
        host.resolve({"target": "cpu", "options": {"conv_algorithm": "fft"}})
    with pytest.raises(TargetError, match="no option 'tile'"):
        host.resolve({"target": "cpu", "options": {"tile": 8}})


def test_support_names_the_reason() -> None:
    x = np.zeros((1, 4, 5, 5), np.float32)
    graph, _ = one_op("gelu", [x], [], approximate="tanh")
    answer = plugin.support(graph.nodes[0], graph)
    assert not answer.supported and "tanh" in answer.reason
    graph, _ = one_op("group_norm", [x], [], num_groups=2)
    assert "no cpu lowering" in plugin.support(graph.nodes[0], graph).reason
    h = np.zeros((2, 3), np.float16)
    graph, _ = one_op("relu", [h], [])
    assert plugin.support(graph.nodes[0], graph).supported
    assert "low_precision=False" in plugin.support(graph.nodes[0], graph, False).reason


def test_runtime_conv_weight_is_declined() -> None:
    x = np.zeros((1, 4, 5, 5), np.float32)
    w = np.zeros((2, 4, 3, 3), np.float32)
    graph, _ = one_op("conv2d", [x, w], [])
    assert "constant" in plugin.support(graph.nodes[0], graph).reason


def test_pack_is_built_on_the_kit_and_refuses_unclaimed_partitions(host: PluginHost) -> None:
    from cuvil_kernels_cpu.lowering import LOWERINGS

    from cuvil_ref.plugin.kit import KernelPack

    assert isinstance(plugin.PACK, KernelPack)
    assert plugin.PACK.coverage() == sorted(LOWERINGS)
    x = np.zeros((1, 4, 5, 5), np.float32)
    graph, _ = one_op("group_norm", [x], [], num_groups=2)
    with pytest.raises(TargetError, match="group_norm.*no cpu lowering"):
        plugin.cuvil_lower_partition(host.resolve("cpu"), graph, {})
    h = np.zeros((2, 3), np.float16)
    graph, _ = one_op("relu", [h], [])
    spec = host.resolve({"target": "cpu", "options": {"low_precision": False}})
    assert not plugin.cuvil_supports_node(spec, graph.nodes[0], graph).supported
    assert plugin.cuvil_supports_node(host.resolve("cpu"), graph.nodes[0], graph).supported
