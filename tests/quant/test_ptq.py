"""Post-training quantization of small graphs: accuracy, integer coverage, determinism, report."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cuvil_ref  # noqa: F401  (registers the ops)
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, TensorType, Value, verify
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from cuvil_ref.quant import quantize_module

HEAVY_FLOAT = {
    "conv2d",
    "linear",
    "matmul",
    "add",
    "mul",
    "concat",
    "batch_norm",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "max_pool2d",
}
RNG = np.random.default_rng(0)


def const(b: GraphBuilder, name: str, *shape: int, std: float = 0.2) -> Value:
    return b.constant(name, RNG.normal(0, std, shape).astype(np.float32))


def conv(b: GraphBuilder, x: Value, cin: int, cout: int, k: int = 3, **attrs: object) -> Value:
    w = const(b, "w", cout, cin, k, k, std=1.0 / math.sqrt(cin * k * k))
    bias = const(b, "bias", cout, std=0.1)
    p = k // 2
    return b.op("conv2d", [x, w, bias], {"padding": (p, p, p, p), **attrs})


def batches(shape: tuple[int, ...], n: int = 3, seed: int = 1) -> list[tuple[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=shape).astype(np.float32),) for _ in range(n)]


def conv_pool_linear() -> Graph:
    """conv -> batch_norm (separate) -> relu -> max_pool -> conv -> relu6 -> flatten -> linear."""
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 3, 8, 8), DType.f32))
    y = conv(b, x, 3, 8)
    mean = const(b, "mean", 8, std=0.1)
    var = b.constant("var", RNG.uniform(0.5, 2, 8).astype(np.float32))
    gamma, beta = const(b, "gamma", 8, std=1.0), const(b, "beta", 8, std=0.1)
    y = b.op("batch_norm", [y, mean, var, gamma, beta], {"eps": 1e-5})
    y = b.op("relu", [y])
    y = b.op("max_pool2d", [y], {"kernel": (2, 2)})
    y = b.op("relu6", [conv(b, y, 8, 8)])
    y = b.op("flatten", [y], {"start_dim": 1})
    w = const(b, "fc_w", 10, 128, std=0.1)
    return b.build([b.op("linear", [y, w, const(b, "fc_b", 10)])])


def residual() -> Graph:
    """conv -> relu -> conv, + skip, relu -> adaptive avg pool -> flatten -> linear."""
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 4, 6, 6), DType.f32))
    stem = b.op("relu", [conv(b, x, 4, 8)])
    y = conv(b, b.op("relu", [conv(b, stem, 8, 8)]), 8, 8)
    y = b.op("relu", [b.op("add", [y, stem])])
    y = b.op(
        "flatten", [b.op("adaptive_avg_pool2d", [y], {"output_size": (1, 1)})], {"start_dim": 1}
    )
    return b.build([b.op("linear", [y, const(b, "fc", 5, 8)])])


def concat_branches() -> Graph:
    """Two conv branches concatenated, then avg_pool2d and a mul with a third branch."""
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 8, 8), DType.f32))
    left = b.op("relu", [conv(b, x, 3, 4)])
    right = conv(b, x, 3, 6, k=1)
    y = b.op("concat", [left, right], {"axis": 1})
    y = b.op(
        "avg_pool2d",
        [y],
        {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "count_include_pad": False},
    )
    gate = b.op("avg_pool2d", [conv(b, x, 3, 10)], {"kernel": (2, 2)})
    return b.build([b.op("mul", [y, gate])])


def sqnr(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return 10 * math.log10(np.sum(ref**2) / np.sum((ref - got) ** 2))


@pytest.mark.parametrize(
    "make, shape",
    [(conv_pool_linear, (4, 3, 8, 8)), (residual, (2, 4, 6, 6)), (concat_branches, (2, 3, 8, 8))],
)
def test_ptq_is_accurate_and_integer(make, shape) -> None:
    graph = make()
    data = batches(shape)
    qmod, report = quantize_module(Module(graph), calibration_data=data)
    verify(qmod)
    ops = {n.op for n in qmod.graph.nodes}
    assert not ops & HEAVY_FLOAT, f"float heavy ops left: {ops & HEAVY_FLOAT}"
    assert report["summary"]["float_fallback"] == 0
    for (x,) in data:
        ref, got = interpret(graph, [x])[0], interpret(qmod, [x])[0]
        assert got.dtype == np.float32 and sqnr(ref, got) > 30
    assert report["output_sqnr_db"][0] > 30
    layers = [x for x in report["layers"] if x["scheme"].startswith("int8 per")]
    assert layers and all(x["sqnr_db"] > 25 for x in layers)
    assert all(x["output_scale"] > 0 and -128 <= x["output_zero_point"] <= 127 for x in layers)


def test_ops_chosen_and_relus_fused() -> None:
    qmod, report = quantize_module(
        Module(conv_pool_linear()), calibration_data=batches((4, 3, 8, 8))
    )
    hist = qmod.graph.op_histogram()
    assert hist["qconv2d"] == 2 and hist["qlinear"] == 1 and hist["qmax_pool2d"] == 1
    assert hist["quantize"] == 1 and hist["dequantize"] == 1
    convs = [n for n in qmod.graph.nodes if n.op == "qconv2d"]
    first, second = convs
    assert first.attrs["qmin"] == first.attrs["out_zp"] and first.attrs["qmax"] == 127  # relu
    zp, scale = second.attrs["out_zp"], float(np.float32(second.attrs["out_scale"]))
    assert (second.attrs["qmin"], second.attrs["qmax"]) == (zp, min(127, zp + round(6 / scale)))
    assert len(first.attrs["multiplier"]) == 8  # per channel
    fused = [x for x in report["layers"] if x["scheme"] == "fused"]
    assert {x["op"] for x in fused} == {"relu", "relu6"}
    assert report["layers"][0]["weight_scales"]["count"] == 8


def test_batch_norm_folding_preserves_results() -> None:
    graph = conv_pool_linear()
    folded = fold_batchnorm(graph).graph  # the pass PTQ runs first
    assert "batch_norm" not in folded.op_histogram()
    (x,) = batches((2, 3, 8, 8), 1)[0]
    np.testing.assert_allclose(
        interpret(folded, [x])[0], interpret(graph, [x])[0], rtol=1e-4, atol=1e-5
    )


def test_per_tensor_weights() -> None:
    qmod, report = quantize_module(
        Module(residual()), calibration_data=batches((2, 4, 6, 6)), per_channel=False
    )
    convs = [n for n in qmod.graph.nodes if n.op == "qconv2d"]
    assert convs and all(len(n.attrs["multiplier"]) == 1 for n in convs)
    assert any(x["scheme"] == "int8 per-tensor" for x in report["layers"])
    assert report["output_sqnr_db"][0] > 25


def test_float_fallback_is_reported_and_bracketed() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 6, 6), DType.f32))
    y = b.op("abs", [conv(b, x, 3, 4)])
    out = conv(b, y, 4, 4)
    graph = b.build([out])
    qmod, report = quantize_module(graph, calibration_data=batches((2, 3, 6, 6)))
    ops = [n.op for n in qmod.graph.nodes]
    i = ops.index("abs")
    assert ops[i - 1] == "dequantize" and ops[i + 1] == "quantize"
    (entry,) = report["float_fallback"]
    assert entry["op"] == "abs" and "no int8 form" in entry["reason"]
    assert report["output_sqnr_db"][0] > 30


def test_skip_keeps_named_ops_in_float() -> None:
    qmod, report = quantize_module(
        Module(residual()), calibration_data=batches((2, 4, 6, 6)), skip=("linear",)
    )
    assert "linear" in qmod.graph.op_histogram()
    assert any(x["op"] == "linear" and "skip" in x["reason"] for x in report["float_fallback"])


def test_matmul_forms() -> None:
    b = GraphBuilder()
    a = b.input("a", TensorType((2, 4, 16), DType.f32))
    c = b.input("c", TensorType((2, 16, 4), DType.f32))
    y = b.op("matmul", [a, c])  # two activations -> qmatmul
    z = b.op("matmul", [y, const(b, "w", 4, 6)])  # constant right operand -> qlinear
    graph = b.build([b.op("relu", [z])])
    rng = np.random.default_rng(3)
    data = [
        (
            rng.normal(size=(2, 4, 16)).astype(np.float32),
            rng.normal(size=(2, 16, 4)).astype(np.float32),
        )
        for _ in range(2)
    ]
    qmod, report = quantize_module(graph, calibration_data=data)
    hist = qmod.graph.op_histogram()
    assert hist.get("qmatmul") == 1 and hist.get("qlinear") == 1 and "matmul" not in hist
    assert report["output_sqnr_db"][0] > 30


def test_quantized_graph_is_deterministic_and_order_independent() -> None:
    qmod, _ = quantize_module(Module(concat_branches()), calibration_data=batches((2, 3, 8, 8)))
    (x,) = batches((2, 3, 8, 8), 1, seed=9)[0]
    first, second = interpret(qmod, [x])[0], interpret(qmod, [x])[0]
    assert first.tobytes() == second.tobytes()
    nodes = list(qmod.graph.nodes)
    # the first two integer convs read only the quantized input: swap them
    i, j = [k for k, n in enumerate(nodes) if n.op == "qconv2d"][:2]
    nodes[i], nodes[j] = nodes[j], nodes[i]
    reordered = qmod.graph.replace(nodes=nodes)
    verify(reordered)
    assert interpret(reordered, [x])[0].tobytes() == first.tobytes()


def test_all_zero_activation_uses_safe_scale() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 5, 5), DType.f32))
    dead = b.op("relu", [b.op("neg", [b.op("relu", [x])])])  # always zero
    out = b.op("add", [conv(b, x, 3, 3), dead])
    data = batches((2, 3, 5, 5))
    qmod, report = quantize_module(b.build([out]), calibration_data=data)
    assert np.all(np.isfinite(interpret(qmod, [data[0][0]])[0]))
    assert "qadd" in qmod.graph.op_histogram()
    assert report["output_sqnr_db"][0] > 30


def test_zoo_digits_cnn() -> None:
    pytest.importorskip("torch")
    from cuvil_ref import frontend
    from cuvil_ref.zoo import get_model

    model, shape = get_model("digits_cnn")
    mod = frontend.torch_to_cuvilir(model, input_shape=shape)
    data = batches(tuple(shape), n=4)
    qmod, report = quantize_module(mod, calibration_data=data)
    assert report["summary"]["float_fallback"] == 0
    assert {"qconv2d", "qlinear"} <= set(qmod.graph.op_histogram())
    assert report["output_sqnr_db"][0] > 25


def test_skip_nodes_names_nodes_not_ops() -> None:
    """A node named like its op ('conv2d') is skipped alone, not every conv."""
    from cuvil_ref.quant.calibrate import calibrate, normalize_batches
    from cuvil_ref.quant.ptq import quantize_graph

    graph = conv_pool_linear()
    convs = [n.outputs[0].name for n in graph.nodes if n.op == "conv2d"]
    assert len(convs) > 1
    data = normalize_batches(graph, batches((2, 3, 8, 8), 1))
    qparams = calibrate(graph, data, "minmax")
    qgraph, _, _ = quantize_graph(graph, qparams, skip_nodes=[convs[0]])
    ops = qgraph.op_histogram()
    assert ops.get("conv2d") == 1 and ops.get("qconv2d") == len(convs) - 1
