"""The planning step without a GPU: a small graph lowers to the expected kernels, launch
configs, arena layout; options change the code; declined nodes say why."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_hip import plugin
from cuvil_kernels_hip.lowered_sources import plan_graph
from cuvil_kernels_hip.lowering import LOWERINGS
from cuvil_kernels_hip.planning import plan_partition
from cuvil_kernels_hip.plugin import support_reason
from cuvil_kernels_hip.runtime import ARENA_ALIGNMENT

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ir.types import TensorType
from cuvil_ref.passes.memory_plan import plan_memory
from cuvil_ref.plugin import TargetSpec


def _conv_block() -> Graph:
    """x -> fused_conv2d(relu) -> max_pool2d -> flatten -> linear -> softmax."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 8, 8), DType.f32))
    w = b.constant("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.constant("b", rng.standard_normal(4).astype(np.float32))
    y = b.op("fused_conv2d", [x, w, bias], {"padding": (1, 1, 1, 1), "activation": "relu"})
    p = b.op("max_pool2d", [y], {"kernel": (2, 2)})
    f = b.op("flatten", [p], {"start_dim": 1})
    fw = b.constant("fw", rng.standard_normal((5, 64)).astype(np.float32))
    z = b.op("linear", [f, fw])
    s = b.op("softmax", [z], {"axis": -1})
    return b.build([s])


def test_small_graph_plans_expected_kernels_and_launches() -> None:
    graph = _conv_block()
    plan = plan_graph(graph)
    families = [launch.source.family for launch in plan.launches]
    # flatten is a view: the plan gives it the pool output's bytes, so it needs no launch
    assert families == ["conv2d", "pool2d", "gemm", "normalization"]
    conv, pool, gemm, softmax = plan.launches
    # conv: GEMM M=OC=4, N=2*8*8=128 pixels, tile 32 -> grid (4, 1, groups=1), 16x16 threads
    assert conv.grid == (4, 1, 1) and conv.block == (16, 16, 1)
    assert conv.args[:5] == ("x", "w", "b", graph.nodes[0].outputs[0].name, 2)
    assert "v = cuvil_max_nan((v), 0.0f);" in conv.source.code  # relu keeps NaN
    # pool: one thread per output element (2*4*4*4 = 128), block 256 -> one block
    assert pool.grid == (1, 1, 1) and pool.block == (256, 1, 1)
    flat, pooled = (graph.nodes[i].outputs[0].name for i in (2, 1))
    assert plan.buffers[flat].offset == plan.buffers[pooled].offset
    # linear: M=2, N=5, K=64, weight [N, K] read transposed, no bias
    assert gemm.args[2:] == (graph.nodes[3].outputs[0].name, 2, 5, 64, 0, 0)
    assert "(long long)gn * K + gk" in gemm.source.code
    assert softmax.args[-2:] == (2, 5)
    for launch in plan.launches:
        assert launch.source.entry in launch.source.code
        assert 'extern "C" __global__' in launch.source.code


def test_a_view_of_a_partition_input_is_a_word_copy() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 64), DType.f32))
    graph = b.build([b.op("relu", [b.op("reshape", [x], {"shape": (128,)})])])
    copy, _ = plan_graph(graph).launches
    assert copy.args[-1] == 128 and "v = (v); out[i] = (v);" in copy.source.code


def test_arena_uses_the_compiler_memory_plan_as_given() -> None:
    graph = _conv_block()
    memory = plan_memory(graph)
    plan = plan_partition(graph, {}, memory)
    for node in graph.nodes:
        name = node.outputs[0].name
        assert plan.buffers[name].offset == memory.buffers[name].offset
    tail = [plan.buffers[n] for n in ("w", "b", "fw", "x")]
    assert min(b.offset for b in tail) >= memory.arena_bytes - ARENA_ALIGNMENT
    assert all(b.offset % ARENA_ALIGNMENT == 0 for b in plan.buffers.values())
    assert plan.arena_bytes >= max(b.offset + b.nbytes for b in plan.buffers.values())
    np.testing.assert_array_equal(plan.constants["w"], graph.constants["w"])


def test_loop_unroll_factor_flows_from_target_options_into_the_code() -> None:
    graph = _conv_block()
    codes = {}
    for unroll in (1, 8):
        plan = plan_graph(graph, {"loop_unroll_factor": unroll, "block_size": 128})
        assert plan.options.loop_unroll_factor == unroll
        conv = plan.launches[0].source.code
        assert f"#pragma unroll {unroll}\n    for (int kk = 0;" in conv
        assert conv.count("acc[i][j] += As") == unroll
        assert plan.launches[1].block == (128, 1, 1)
        codes[unroll] = [launch.source.sha256 for launch in plan.launches]
    assert all(a != b for a, b in zip(codes[1], codes[8]))


def test_tensor_core_feature_picks_wmma_for_aligned_fp16_gemm() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((32, 64), DType.f16))
    w = b.constant("w", np.ones((16, 64), np.float16))
    y = b.op("linear", [x, w])
    graph = b.build([y])
    simt = plan_graph(graph).launches[0]
    wmma = plan_graph(graph, features=("tensor_core", "sm_90")).launches[0]
    assert "wmma::mma_sync" not in simt.source.code
    assert "wmma::mma_sync" in wmma.source.code and wmma.grid == (1, 1, 1)


def test_int8_qlinear_binds_tables_and_zero_points() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((3, 8), DType.i8))
    w = b.constant("w", np.arange(-16, 16, dtype=np.int8).reshape(4, 8))
    bias = b.constant("bias", np.array([1, -2, 3, -4], dtype=np.int32))
    attrs = {"x_zp": -3, "multiplier": (1 << 30,) * 4, "shift": (33,) * 4, "out_scale": 0.1}
    graph = b.build([b.op("qlinear", [x, w, bias], attrs)])
    plan = plan_graph(graph)
    (launch,) = plan.launches
    assert launch.source.family == "qgemm"
    mult_name, shift_name = launch.args[4], launch.args[5]
    np.testing.assert_array_equal(plan.constants[mult_name], [1 << 30] * 4)
    assert plan.constants[shift_name].dtype == np.int32
    assert launch.args[6:11] == (3, 4, 8, 0, 0) and launch.args[11] == -3


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "reason"),
    [
        ("add", [(2, 3), (3,)], {}, "runtime broadcast"),
        ("softmax", [(2, 3)], {"axis": 0}, "not the last axis"),
        ("sum", [(2, 3, 4)], {"axes": (0, 2)}, "not contiguous"),
        ("relu", [(4,)], {}, None),
    ],
)
def test_support_reasons_are_precise(
    op: str, inputs: list[tuple[int, ...]], attrs: dict, reason: str | None
) -> None:
    b = GraphBuilder()
    xs = [b.input(f"x{i}", TensorType(s, DType.f32)) for i, s in enumerate(inputs)]
    graph = b.build([b.op(op, xs, attrs)])
    got = support_reason(graph.nodes[0], graph)
    assert (got is None) if reason is None else (reason in got)


def test_integer_and_symbolic_nodes_are_declined_and_planning_refuses_them() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 4), DType.f32))
    graph = b.build([b.op("relu", [x])])
    assert "symbolic dim 'batch'" in support_reason(graph.nodes[0], graph)
    b = GraphBuilder()
    x = b.input("x", TensorType((4,), DType.i32))
    graph = b.build([b.op("relu", [x])])
    assert "i32" in support_reason(graph.nodes[0], graph)
    with pytest.raises(TargetError, match="cannot lower .*relu.*: dtype i32"):
        plugin.cuvil_lower_partition(TargetSpec("hip"), graph, {})
    with pytest.raises(TargetError, match="cannot lower .*relu.*: dtype i32"):
        plan_graph(graph)
    assert "batch_norm" not in LOWERINGS and "qconcat" not in LOWERINGS
