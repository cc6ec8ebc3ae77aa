"""GraphBuilder: names, constants, inferred types, attribute normalization, multi-output nodes."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import IRError, ShapeError, UnknownOpError
from cuvil_ref.ir import DType, GraphBuilder, Node, Provenance, Value, verify
from cuvil_ref.ir.builder import sanitize_name
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import REGISTRY


def test_types_are_inferred_through_broadcasting_and_symbols() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 1, 3), DType.f16))
    y = b.input("y", TensorType((4, 1), DType.f32))
    z = b.op("add", [x, y])
    assert z.type == TensorType(("batch", 4, 3), DType.f32)
    c = b.op("cast", [z], {"dtype": DType.i32})
    assert c.type.dtype is DType.i32
    graph = b.build([c])
    assert [n.op for n in graph.nodes] == ["add", "cast"]
    assert graph.nodes[1].attrs == {"dtype": "i32"}  # DType normalized to its name
    verify(graph)


def test_names_are_fresh_and_sanitized() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2,)))
    names = [b.op("relu" if "relu" in REGISTRY else "neg", [x], name="layer1.0/act").name
             for _ in range(3)]  # fmt: skip
    assert names[0] == "layer1.0_act" and len(set(names)) == 3
    assert sanitize_name("0conv") == "v0conv" and sanitize_name("") == "v"
    assert b.input("x", TensorType((2,))).name != "x"


def test_reserve_rejects_invalid_or_taken_names() -> None:
    b = GraphBuilder()
    b.input("x", TensorType((2,)))
    with pytest.raises(IRError, match="defined twice"):
        b.reserve("x")
    with pytest.raises(IRError, match="invalid value name"):
        b.reserve("has space")
    with pytest.raises(IRError, match="defined twice"):
        b.add_input(Value("x", TensorType((2,))))


def test_constants_are_typed_and_frozen_copies() -> None:
    b = GraphBuilder()
    data = np.arange(6, dtype=np.int8).reshape(2, 3)
    c = b.constant("w", data)
    assert c.type == TensorType((2, 3), DType.i8)
    graph = b.build([c])
    data[0, 0] = 99
    assert graph.constants["w"][0, 0] == 0
    assert not graph.constants["w"].flags.writeable
    assert GraphBuilder().constant("s", np.float32(0.5)).type == TensorType((), DType.f32)


def test_unsupported_constant_dtype_is_rejected() -> None:
    with pytest.raises(ValueError, match="complex128 has no Cuvil dtype"):
        GraphBuilder().constant("w", np.zeros(2, np.complex128))


def test_attributes_are_normalized_and_checked() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2,)))
    with pytest.raises(IRError, match="attribute 'dtype' is required"):
        b.op("cast", [x])
    with pytest.raises(IRError, match="did you mean 'dtype'"):
        b.op("cast", [x], {"dtyp": "f16"})
    with pytest.raises(UnknownOpError, match="did you mean"):
        b.op("castt", [x])
    with pytest.raises(ShapeError, match="input 0 has dtype i32"):
        b.op("exp", [b.input("i", TensorType((2,), DType.i32))])
    assert b.nodes == []  # failed ops add nothing


def test_provenance_is_attached() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2,)))
    prov = Provenance("neg_1", "head", "model.py:3")
    b.op("neg", [x], provenance=prov)
    assert b.nodes[0].provenance == prov


def test_multi_output_ops_need_op_multi() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((4, 3)))
    with pytest.raises(IRError, match="use op_multi"):
        b.op("split", [x], {"axis": 0, "sizes": (1, 3)})
    a, c = b.op_multi("split", [x], {"axis": 0, "sizes": (1, 3)}, name="part")
    assert (a.name, c.name) == ("part_0", "part_1")
    assert (a.type.shape, c.type.shape) == ((1, 3), (3, 3))
    verify(b.build([a, c]))


def test_output_types_may_only_add_layout_or_quant_tags() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 2, 2, 3)))
    (y,) = b.op_multi("neg", [x], output_types=[TensorType((1, 2, 2, 3), layout="NHWC")])
    assert y.type.layout == "NHWC"
    with pytest.raises(IRError, match="differs from inferred"):
        b.op_multi("neg", [x], output_types=[TensorType((1, 2, 2, 4))])
    verify(b.build([y]))


def test_add_node_and_add_constant_copy_from_another_graph() -> None:
    b = GraphBuilder()
    x = b.add_input(Value("x", TensorType((2,))))
    w = b.add_constant("w", np.ones(2, np.float32))
    node = Node("add", (x, w), (Value("y", TensorType((2,))),))
    b.add_node(node)
    with pytest.raises(IRError, match="defined twice"):
        b.add_node(node)
    graph = b.build([node.output])
    assert graph.nodes == (node,)
    verify(graph)
