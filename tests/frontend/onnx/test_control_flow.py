"""ONNX ``If`` and ``Loop`` with conditions known only at run time (the IR's ``if`` / ``while``
regions) and at import time (inlined / unrolled), checked against ONNX Runtime on every path."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.frontend import onnx_to_cuvilir
from cuvil_ref.interpreter import interpret

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


def vi(name: str, elem: int, shape: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def run_both(graph: onnx.GraphProto, feeds: dict[str, np.ndarray]) -> None:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    data = m.SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    module = onnx_to_cuvilir(data)
    actual = interpret(module, list(feeds.values()))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    return module


def if_graph() -> onnx.GraphProto:
    """y = x * w + 1 if sum(x) > 0 else (x - w) with a nested If on the same condition."""
    then = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["t0"]),
            helper.make_node("Add", ["t0", "one"], ["t_out"]),
        ],
        "then",
        [],
        [vi("t_out", F, [2, 3])],
        [numpy_helper.from_array(np.float32(1.0), "one")],
    )
    inner_then = helper.make_graph(
        [helper.make_node("Sub", ["x", "w"], ["i_out"])], "inner_then", [], [vi("i_out", F, [2, 3])]
    )
    inner_else = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["j_out"])], "inner_else", [], [vi("j_out", F, [2, 3])]
    )
    other = helper.make_graph(
        [
            helper.make_node("Not", ["c"], ["nc"]),
            helper.make_node(
                "If", ["nc"], ["e_out"], then_branch=inner_then, else_branch=inner_else
            ),
        ],
        "else",
        [],
        [vi("e_out", F, [2, 3])],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
    ]
    return helper.make_graph(
        nodes,
        "g",
        [vi("x", F, [2, 3])],
        [vi("y", F, [2, 3])],
        [
            numpy_helper.from_array(np.float32(0.0), "zero"),
            numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w"),
        ],
    )


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_at_run_time_takes_each_branch(sign: float) -> None:
    x = (sign * np.abs(np.random.default_rng(0).standard_normal((2, 3)))).astype(np.float32)
    module = run_both(if_graph(), {"x": x})
    assert any(n.op == "if" for n in module.graph.nodes)


def loop_graph(with_cond: bool) -> onnx.GraphProto:
    """acc = acc * 0.5 + x, M times (M an input) or until acc's sum passes 10."""
    body_nodes = [
        helper.make_node("Mul", ["acc_in", "half"], ["h"]),
        helper.make_node("Add", ["h", "x"], ["acc_out"]),
        helper.make_node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
        helper.make_node("Less", ["s", "ten"], ["c_out"])
        if with_cond
        else helper.make_node("Identity", ["c_in"], ["c_out"]),
    ]
    body = helper.make_graph(
        body_nodes,
        "body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("acc_in", F, [3])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", F, [3])],
        [numpy_helper.from_array(np.float32(0.5), "half")],
    )
    return helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "acc0"], ["acc"], body=body)],
        "g",
        [vi("x", F, [3]), vi("M", TensorProto.INT64, []), vi("c0", TensorProto.BOOL, [])],
        [vi("acc", F, [3])],
        [
            numpy_helper.from_array(np.float32(10.0), "ten"),
            numpy_helper.from_array(np.zeros(3, np.float32), "acc0"),
        ],
    )


@pytest.mark.parametrize("with_cond", [False, True])
@pytest.mark.parametrize("trips", [0, 1, 7])
def test_loop_at_run_time(with_cond: bool, trips: int) -> None:
    feeds = {
        "x": np.array([1.0, 2.0, 0.5], np.float32),
        "M": np.array(trips, np.int64),
        "c0": np.array(True),
    }
    module = run_both(loop_graph(with_cond), feeds)
    assert any(n.op == "while" for n in module.graph.nodes)


def test_loop_with_known_trip_count_and_scan_output_is_unrolled() -> None:
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["scan"]),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
        ],
        "body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("acc_in", F, [2])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", F, [2]), vi("scan", F, [2])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "all"], body=body)],
        "g",
        [vi("x", F, [2])],
        [vi("acc", F, [2]), vi("all", F, [4, 2])],
        [
            numpy_helper.from_array(np.array(4, np.int64), "M"),
            numpy_helper.from_array(np.zeros(2, np.float32), "acc0"),
        ],
    )
    module = run_both(graph, {"x": np.array([1.5, -2.0], np.float32)})
    assert not any(n.op == "while" for n in module.graph.nodes)


def test_if_branches_of_different_types_are_refused() -> None:
    from cuvil_ref.errors import CuvilError

    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["a"])], "then", [], [vi("a", F, [2, 3])]
    )
    other = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["b"], keepdims=0)], "else", [], [vi("b", F, [])]
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        "g",
        [vi("x", F, [2, 3]), vi("c", TensorProto.BOOL, [])],
        [vi("y", F, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(CuvilError, match="If's branches give results of different types"):
        onnx_to_cuvilir(m.SerializeToString())


def test_imported_regions_compile_and_run_on_each_path() -> None:
    """The passes, planning and lowering take the imported if/while like the interpreter."""
    from cuvil_ref.lowering import compile_module

    for graph, feeds in (
        (if_graph(), [np.ones((2, 3), np.float32)]),
        (if_graph(), [-np.ones((2, 3), np.float32)]),
        (loop_graph(True), [np.array([1, 2, 0.5], np.float32), np.array(5), np.array(True)]),
    ):
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 9
        module = onnx_to_cuvilir(m.SerializeToString())
        program = compile_module(module, target="ref")
        np.testing.assert_allclose(program.run(feeds)[0], interpret(module, feeds)[0], rtol=1e-6)
