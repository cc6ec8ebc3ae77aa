"""Converters whose node tests leave corners open, checked against ONNX Runtime on the same
hand-built model: bidirectional and reverse recurrent layers with sequence lengths, Einsum
with several operands, Resize with antialiasing, reflect padding, ConvTranspose with groups."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.frontend import onnx_to_cuvilir
from cuvil_ref.interpreter import interpret

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(0)


def check(node, inputs, outputs, inits=(), opset=17, rtol=1e-4, atol=1e-5):  # type: ignore[no-untyped-def]
    """Build a one-node model, run it on ONNX Runtime and on Cuvil, compare every output."""

    def info(name, a):  # type: ignore[no-untyped-def]
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
        )

    graph = helper.make_graph(
        [node],
        "g",
        [info(n, a) for n, a in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    data = m.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    expected = session.run(None, dict(inputs))
    actual = interpret(onnx_to_cuvilir(data), [a for _, a in inputs])
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["bidirectional", "reverse"])
def test_recurrent_layers_with_sequence_lengths(kind: str, direction: str) -> None:
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    dirs, hidden, seq, batch, feat = (2 if direction == "bidirectional" else 1), 3, 4, 2, 5
    w, r = f32(dirs, gates * hidden, feat), f32(dirs, gates * hidden, hidden)
    b = f32(dirs, 2 * gates * hidden)
    lens = np.array([4, 2], dtype=np.int32)
    attrs = {"hidden_size": hidden, "direction": direction}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, ["X", "W", "R", "B", "lens"], outs, **attrs)
    check(
        node, [("X", f32(seq, batch, feat)), ("lens", lens)], outs, [("W", w), ("R", r), ("B", b)]
    )


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("i,j->ij", [(3,), (4,)]),
        ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
        ("bii->b", [(3, 4, 4)]),
    ],
)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    check(node, [(n, f32(*s)) for n, s in zip(names, shapes)], ["y"])


@pytest.mark.parametrize(
    "attrs",
    [
        {"mode": "linear", "antialias": 1},
        {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "round_prefer_ceil",
        },
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
    ],
)
@pytest.mark.parametrize("by", ["scales", "sizes"])
def test_resize(attrs: dict, by: str) -> None:  # type: ignore[type-arg]
    """With ``scales`` whose products are not whole, ``align_corners`` follows ONNX's reference
    (the unrounded output length), where ONNX Runtime uses the rounded one: that case is
    checked with ``sizes`` only (docs/onnx-coverage.md has the node tests that pin it)."""
    if by == "scales" and attrs.get("coordinate_transformation_mode") == "align_corners":
        pytest.skip("ONNX Runtime and ONNX's reference differ here; the node tests decide")
    if by == "scales":
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
        init = ("scales", np.array([1, 1, 0.6, 1.7], np.float32))
    else:  # a height of 1 takes the one-cell branch of pytorch_half_pixel
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)
        init = ("sizes", np.array([1, 2, 1, 13], np.int64))
    check(node, [("x", f32(1, 2, 7, 9))], ["y"], [init], opset=19)


def test_reflect_and_edge_padding() -> None:
    for mode in ("reflect", "edge"):
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
        check(node, [("x", f32(2, 3, 4))], ["y"], [("pads", np.array([0, 2, 1, 0, 1, 3]))])


def test_grouped_strided_conv_transpose() -> None:
    node = helper.make_node(
        "ConvTranspose",
        ["x", "w", "b"],
        ["y"],
        group=2,
        strides=[2, 3],
        pads=[1, 0, 0, 2],
        output_padding=[1, 1],
        dilations=[1, 2],
    )
    check(node, [("x", f32(1, 4, 3, 5))], ["y"], [("w", f32(4, 3, 3, 2)), ("b", f32(6))])


def needs(*ir_ops: str) -> None:
    """Skip where this checkout's IR lacks an op the converter lowers to (it is then not
    claimed, and importing the node raises the unsupported-op error instead)."""
    from cuvil_ref.ops import REGISTRY

    missing = [op for op in ir_ops if op not in REGISTRY]
    if missing:
        pytest.skip(f"the IR has no {', '.join(missing)}")


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("spatial", [(7, 6), (5, 4, 6)])
def test_max_pool_indices_count_batch_and_channels(storage_order: int, spatial: tuple) -> None:  # type: ignore[type-arg]
    """The node tests have one image of one channel; ONNX's Indices are flat over the whole
    input, so batch and channel offsets are checked here."""
    needs("max_pool_with_indices")
    if storage_order and len(spatial) == 3:
        pytest.skip("Cuvil refuses storage_order=1 over 3 spatial dims")
    sp = len(spatial)
    node = helper.make_node(
        "MaxPool",
        ["x"],
        ["y", "i"],
        kernel_shape=[3] * sp,
        strides=[2] * sp,
        pads=[1] * (2 * sp),
        storage_order=storage_order,
    )
    x = f32(2, 3, *spatial)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 9
    data = m.SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    actual = interpret(onnx_to_cuvilir(data), [x])
    np.testing.assert_array_equal(actual[0], expected[0])
    np.testing.assert_array_equal(actual[1], expected[1])


def test_scatter_nd_with_batch_dims_and_negative_indices() -> None:
    needs("scatter")
    for reduction in ("none", "add", "mul", "max"):
        node = helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], reduction=reduction)
        idx = np.array([[[0, -1], [2, 1]], [[1, 0], [-3, 2]]], dtype=np.int64)  # unique
        check(node, [("x", f32(3, 4, 5)), ("u", f32(2, 2, 5))], ["y"], [("idx", idx)], opset=18)


def test_scatter_elements_negative_indices() -> None:
    needs("scatter")
    node = helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], axis=1, reduction="add")
    idx = np.array([[0, -1, 2], [-4, 1, 1]], dtype=np.int64)
    check(node, [("x", f32(2, 4)), ("u", f32(2, 3))], ["y"], [("idx", idx)], opset=18)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(exclusive: int, reverse: int) -> None:
    """With the IR's cumsum where it has one, slice by slice where not."""
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    axis = np.array(-1, dtype=np.int64)
    check(node, [("x", f32(2, 3, 5))], ["y"], [("axis", axis)], opset=14)


def test_conv_transpose_3d_with_pads_and_output_padding() -> None:
    needs("conv_transpose")
    node = helper.make_node(
        "ConvTranspose",
        ["x", "w", "b"],
        ["y"],
        strides=[2, 1, 2],
        pads=[1, 0, 0, 0, 1, 1],
        output_padding=[1, 0, 1],
        group=2,
    )
    check(node, [("x", f32(1, 4, 3, 4, 3))], ["y"], [("w", f32(4, 2, 2, 3, 2)), ("b", f32(4))])


@pytest.mark.parametrize("n", [1, 3, 5])
def test_det_of_batched_matrices(n: int) -> None:
    node = helper.make_node("Det", ["x"], ["y"])
    check(node, [("x", f32(2, 3, n, n))], ["y"], atol=1e-5)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tfidf_vectorizer_weights_and_trigrams(mode: str) -> None:
    """The node tests count in TF mode only; weights, IDF and trigrams with skips here."""
    node = helper.make_node(
        "TfIdfVectorizer",
        ["x"],
        ["y"],
        mode=mode,
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=2,
        ngram_counts=[0, 3, 7],
        ngram_indexes=[6, 0, 2, 1, 4, 3, 5],  # the slots in another order than the pool
        pool_int64s=[2, 3, 5, 2, 3, 5, 4, 2, 3, 5],
        weights=[0.5, 2.0, 1.5, 1.0, 3.0, 0.25, 4.0],
    )
    x = np.array([[2, 3, 5, 2, 4, 3, 5, 2, 3, 3], [5, 5, 2, 3, 2, 4, 2, 3, 5, 2]], np.int32)
    check(node, [("x", x)], ["y"], opset=9)
