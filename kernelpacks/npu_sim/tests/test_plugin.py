"""The Cuvil hooks of the npu_sim pack: targets, options, claims, the executable and its metrics."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_npu_sim.lowering import TABLE
from qgraphs import conv_attrs, conv_flatten_linear, requant, single

from cuvil_ref.errors import TargetError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import GraphBuilder, TensorType
from cuvil_ref.ir.graph import Graph
from cuvil_ref.plugin.host import PluginHost
from cuvil_ref.plugin.types import Executable, Support


def _supports(host: PluginHost, graph: Graph, target: str = "npu-v3") -> Support:
    spec = host.resolve(target)
    return host.call("cuvil_supports_node", spec, target=spec, node=graph.nodes[0], graph=graph)


def _lower(host: PluginHost, graph: Graph, target: str | dict = "npu-v3") -> Executable:
    spec = host.resolve(target)
    for node in graph.nodes:
        answer = host.call("cuvil_supports_node", spec, target=spec, node=node, graph=graph)
        assert answer.supported, answer.reason
    exe = host.call("cuvil_lower_partition", spec, target=spec, graph=graph, options=spec.options)
    assert isinstance(exe, Executable)
    return exe


def test_targets_and_availability(npu_host: PluginHost) -> None:
    assert {"npu-v3", "npu-v2"} <= set(npu_host.target_names())
    v2 = {o.name: o.default for o in npu_host.info("npu-v2").options}
    assert v2["array_rows"] == 16 and v2["sim_mode"] == "timed" and v2["trace"] is False
    avail = npu_host.availability(npu_host.resolve("npu-v3"))
    assert avail.available and avail.device == "npu-v3 simulator (32x32 int8, 1 GHz)"
    prefs = npu_host.call(
        "cuvil_preferences", npu_host.resolve("npu-v2"), target=npu_host.resolve("npu-v2")
    )
    assert prefs.requires_quantize == "int8"


def test_options_are_validated(npu_host: PluginHost) -> None:
    spec = npu_host.resolve({"target": "npu-v3", "options": {"mac_rows": 16, "trace": True}})
    assert spec.options["array_rows"] == 16 and spec.options["trace"] is True
    assert spec.options["dram_bytes_per_cycle"] == 32  # default filled in
    bad = [
        ({"warp_size": 4}, "no option"),
        ({"array_rows": "32"}, "must be int"),
        ({"sim_mode": "fast"}, "not one of"),
        ({"acc_bytes": 1001}, "multiple of 4"),
        ({"inp_bytes": 1 << 24}, "exceeds what the ISA can address"),
        ({"dram_latency": -1}, "dram_latency"),
        ({"mac_rows": 8, "array_rows": 16}, "disagree"),
    ]
    for options, message in bad:
        with pytest.raises(TargetError, match=message):
            npu_host.resolve({"target": "npu-v3", "options": options})


def test_float_and_boundary_ops_are_declined(npu_host: PluginHost) -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    graph = b.build([b.op("relu", [x])])
    assert _supports(npu_host, graph).reason == "float op: runs on ref"
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    graph = b.build([b.op("quantize", [x], {"scale": (0.1,), "zero_point": (0,)})])
    assert _supports(npu_host, graph).reason == "float op: runs on ref"


@pytest.mark.parametrize(
    ("op", "shapes", "attrs", "consts", "reason"),
    [
        (
            "qmax_pool2d",
            [(1, 2, 7, 8)],
            {"kernel": (3, 2), "stride": (2, 1), "ceil_mode": True},
            0,
            "ceil_mode",
        ),
        (
            "qconv2d",
            [(1, 2, 20, 20), (2, 2, 17, 17), (2,)],
            conv_attrs(2, padding=(8, 8, 8, 8)),
            2,
            "exceeds 7",
        ),
        (
            "qconv2d",
            [(1, 2, 6, 6), (2, 2, 3, 3), (2,)],
            conv_attrs(2, padding=(1, 1, 0, 0)),
            2,
            "asymmetric",
        ),
        (
            "qadaptive_avg_pool2d",
            [(1, 2, 10, 7)],
            {"output_size": (3, 4), "x_zp": 0, **requant([0.1] * 20), "out_scale": 0.1},
            0,
            "not a multiple",
        ),
        ("flatten", [(2, 0, 3)], {"start_dim": 1, "end_dim": -1}, 0, "zero-size tensor"),
    ],
)
def test_declines_with_precise_reason(
    npu_host: PluginHost, op: str, shapes: list, attrs: dict, consts: int, reason: str
) -> None:
    answer = _supports(npu_host, single(op, shapes, attrs, consts))
    assert not answer.supported and reason in answer.reason


def test_declines_broadcasting_qadd_and_runtime_weights(
    npu_host: PluginHost, rng: np.random.Generator
) -> None:
    attrs = {"multiplier": (1 << 29, 1 << 29), "shift": (30,), "out_scale": 0.1}
    answer = _supports(npu_host, single("qadd", [(3, 1), (1, 5)], attrs))
    assert not answer.supported and "broadcasting" in answer.reason
    graph = conv_flatten_linear(rng, runtime_weight=True)
    answer = _supports(npu_host, graph)
    assert not answer.supported and "graph constant" in answer.reason


def test_claims_cover_dilated_and_depthwise_conv(npu_host: PluginHost) -> None:
    dilated = single(
        "qconv2d",
        [(1, 4, 9, 9), (4, 2, 3, 3), (4,)],
        conv_attrs(4, padding=(2, 2, 2, 2), dilation=(2, 2), groups=2),
        2,
    )
    depthwise = single(
        "qconv2d",
        [(1, 8, 6, 6), (8, 1, 3, 3), (8,)],
        conv_attrs(8, padding=(1, 1, 1, 1), groups=8),
        2,
    )
    for graph in (dilated, depthwise):
        assert _supports(npu_host, graph).supported
        x = np.random.default_rng(3).integers(-128, 128, graph.inputs[0].type.shape, dtype=np.int8)
        (got,) = _lower(npu_host, graph).run([x])
        np.testing.assert_array_equal(got, interpret(graph, [x])[0])


def test_partition_is_bit_exact_with_metrics(
    npu_host: PluginHost, rng: np.random.Generator
) -> None:
    graph = conv_flatten_linear(rng)
    exe = _lower(npu_host, graph, {"target": "npu-v3", "options": {"trace": True}})
    x = rng.integers(-128, 128, (1, 4, 6, 6), dtype=np.int8)
    np.testing.assert_array_equal(exe.run([x])[0], interpret(graph, [x])[0])
    m = exe.metrics()
    ops = [row["op"] for row in m["layers"]]
    # flatten of an NHWC [1, 8, 6, 6] tensor into NCHW order needs a relayout, charged once
    assert ops == ["qconv2d", "qadd", "relayout", "flatten", "qlinear"]
    for key in ("cycles", "roofline_cycles", "dram_bytes", "sram_bytes", "energy_pj"):
        assert m[key] == pytest.approx(sum(row[key] for row in m["layers"]))
    assert m["cycles"] >= m["roofline_cycles"] > 0
    assert 0 < m["mac_utilization"] <= 1 and m["power_w"] > 0 and m["latency_ms"] > 0
    assert m["layers"][0]["macs"] == 8 * 36 * 4 * 9
    assert "GEMM" in m["trace"] and "# conv:" in m["trace"]
    assert m["runs"] == 1


def test_random_mode_and_smaller_target_give_same_bits(
    npu_host: PluginHost, rng: np.random.Generator
) -> None:
    graph = conv_flatten_linear(rng)
    x = rng.integers(-128, 128, (1, 4, 6, 6), dtype=np.int8)
    want = interpret(graph, [x])[0]
    cycles = {}
    for target in (
        {"target": "npu-v3", "options": {"sim_mode": "random"}},
        "npu-v3",
        "npu-v2",
        {"target": "npu-v3", "options": {"dram_bytes_per_cycle": 4}},
    ):
        exe = _lower(npu_host, graph, target)
        np.testing.assert_array_equal(exe.run([x])[0], want)
        cycles[str(target)] = exe.metrics()["cycles"]
    assert cycles["npu-v2"] > cycles["npu-v3"]
    assert (
        cycles[str({"target": "npu-v3", "options": {"dram_bytes_per_cycle": 4}})] > cycles["npu-v3"]
    )


def test_supported_ops_are_registry_ops() -> None:
    from cuvil_ref.ops import REGISTRY

    assert all(op in REGISTRY for op in TABLE)


def test_compile_requires_int8(npu_host: PluginHost) -> None:
    from cuvil_ref.ir.graph import Module
    from cuvil_ref.lowering.compiler import compile_module

    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    module = Module(b.build([b.op("relu", [x])]))
    with pytest.raises(TargetError, match="quantize='int8'"):
        compile_module(module, "npu-v3")
