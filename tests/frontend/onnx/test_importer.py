"""The ONNX importer on small hand-built models: what it refuses (and how it says so), what it
folds, and ONNX semantics that differ from torch's, checked through the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import CaptureError, CuvilError, UnsupportedOpError
from cuvil_ref.frontend import onnx_to_cuvilir
from cuvil_ref.frontend.onnx import supported_ops
from cuvil_ref.frontend.onnx.context import StaticInputError
from cuvil_ref.interpreter import interpret

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def model(nodes, inputs, outputs, inits=(), opset=17):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


F, I64 = TensorProto.FLOAT, TensorProto.INT64


def test_unsupported_op_names_type_node_and_opset() -> None:
    m = model(
        [helper.make_node("NonMaxSuppression", ["x", "s"], ["y"], name="nms_1")],
        [("x", F, [1, 2, 4]), ("s", F, [1, 1, 2])],
        [("y", TensorProto.INT64, [])],
    )
    with pytest.raises(UnsupportedOpError) as info:
        onnx_to_cuvilir(m)
    text = str(info.value)
    assert "ONNX op NonMaxSuppression" in text and "'nms_1'" in text and "opset 17" in text
    assert "docs/onnx-coverage.md" in text


def test_an_unimplemented_operator_version_is_refused() -> None:
    m = model(
        [helper.make_node("Softmax", ["x"], ["y"], name="sm")],
        [("x", F, [2, 3])],
        [("y", F, [2, 3])],
        opset=10,
    )
    m.opset_import[0].version = 1  # Softmax-1
    onnx_to_cuvilir(m)  # version 1 is implemented
    assert 1 in supported_ops()["Softmax"]
    m2 = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [("x", F, [2])],
        [("y", F, [2])],
        opset=5,
    )
    with pytest.raises(UnsupportedOpError, match="Relu .* resolves to operator version 1"):
        onnx_to_cuvilir(m2)


def test_malformed_files_and_types_are_refused(tmp_path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage\xff\xff")
    with pytest.raises(CaptureError, match="not a readable ONNX model"):
        onnx_to_cuvilir(str(bad))
    with pytest.raises(CaptureError, match="does not exist"):
        onnx_to_cuvilir(str(tmp_path / "missing.onnx"))
    with pytest.raises(CaptureError, match="expected an ONNX file path"):
        onnx_to_cuvilir(42)
    m = model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [("x", TensorProto.COMPLEX64, [2])],
        [("y", TensorProto.COMPLEX64, [2])],
    )
    with pytest.raises(UnsupportedOpError, match="element type COMPLEX64"):
        onnx_to_cuvilir(m)


def test_runtime_shape_inputs_are_named_and_can_be_frozen() -> None:
    m = model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
        [("x", F, [2, 3]), ("shape", I64, [2])],
        [("y", F, [3, 2])],
    )
    with pytest.raises(StaticInputError) as info:
        onnx_to_cuvilir(m)
    assert info.value.tensor == "shape" and "constant_inputs={'shape': ...}" in str(info.value)
    mod = onnx_to_cuvilir(m, constant_inputs={"shape": np.array([3, 2])})
    assert len(mod.inputs) == 1
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(interpret(mod, [x])[0], x.reshape(3, 2))


def test_shape_arithmetic_folds_to_constants() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write a flatten."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = [("zero", np.array(0)), ("axes", np.array([0])), ("minus1", np.array([-1]))]
    mod = onnx_to_cuvilir(model(nodes, [("x", F, [2, 3, 4])], [("y", F, [2, 12])], inits))
    assert [n.op for n in mod.graph.nodes] == ["reshape"]


def test_symbolic_dims_stay_symbols_or_are_fixed_by_input_shapes() -> None:
    m = model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["batch", 4])], [("y", F, ["batch", 4])]
    )
    assert onnx_to_cuvilir(m).inputs[0].type.shape == ("batch", 4)
    assert onnx_to_cuvilir(m, input_shapes={"x": (3, 4)}).inputs[0].type.shape == (3, 4)
    with pytest.raises(CaptureError, match="fixes 4"):
        onnx_to_cuvilir(m, input_shapes=[(3, 5)])
    shaped = model(
        [helper.make_node("Shape", ["x"], ["y"])], [("x", F, ["batch", 4])], [("y", I64, [2])]
    )
    with pytest.raises(UnsupportedOpError, match="dynamic dims; Cuvil folds Shape"):
        onnx_to_cuvilir(shaped)


def run1(node, x, out_type, *inits, opset=17, **kw):  # type: ignore[no-untyped-def]
    t = helper.np_dtype_to_tensor_dtype(x.dtype)
    m = model([node], [("x", t, list(x.shape))], [("y", out_type, None)], list(inits), opset)
    return interpret(onnx_to_cuvilir(m, **kw), [x])[0]


def test_gather_counts_negative_indices_from_the_end() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = run1(
        helper.make_node("Gather", ["x", "i"], ["y"], axis=1),
        x,
        F,
        ("i", np.array([[-1, 0], [1, -4]])),
    )
    np.testing.assert_array_equal(y, x[:, [[3, 0], [1, 0]]])


def test_slice_with_negative_steps_and_clamping() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    node = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
    y = run1(
        node,
        x,
        F,
        ("s", np.array([-1, 100])),
        ("e", np.array([-100, 0])),
        ("a", np.array([0, 1])),
        ("st", np.array([-2, -1])),
    )
    np.testing.assert_array_equal(y, x[-1::-2, 100:0:-1])


def test_expand_broadcasts_both_ways() -> None:
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    y = run1(helper.make_node("Expand", ["x", "s"], ["y"]), x, F, ("s", np.array([2, 1, 4])))
    np.testing.assert_array_equal(y, np.broadcast_to(x, (2, 3, 4)))  # the 1 keeps x's 3


def test_reshape_zero_copies_a_dim_unless_allowzero() -> None:
    x = np.zeros((2, 3, 4), np.float32)
    y = run1(helper.make_node("Reshape", ["x", "s"], ["y"]), x, F, ("s", np.array([0, -1])))
    assert y.shape == (2, 12)
    empty = np.zeros((0, 3), np.float32)
    y = run1(
        helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1),
        empty,
        F,
        ("s", np.array([3, 0])),
    )
    assert y.shape == (3, 0)


def test_errors_from_converters_come_out_typed() -> None:
    m = model(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=5)], [("x", F, [2])], [("y", F, [4])]
    )
    with pytest.raises(CuvilError, match="axis 5 is out of range"):
        onnx_to_cuvilir(m)


def test_ml_domain_ops_need_their_domain() -> None:
    """``Binarizer`` is an ai.onnx.ml op: imported there, refused as a default-domain op."""
    node = helper.make_node("Binarizer", ["x"], ["y"], threshold=0.5, domain="ai.onnx.ml")
    m = model([node], [("x", F, [2, 3])], [("y", F, [2, 3])])
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 1))
    x = np.array([[0.2, 0.7, 0.5], [1.0, -1.0, 0.51]], np.float32)
    np.testing.assert_array_equal(interpret(onnx_to_cuvilir(m), [x])[0], (x > 0.5).astype(x.dtype))
    wrong = model([helper.make_node("Binarizer", ["x"], ["y"])], [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(UnsupportedOpError, match="ONNX op Binarizer"):
        onnx_to_cuvilir(wrong)
