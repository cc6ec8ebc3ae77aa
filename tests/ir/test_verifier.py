"""The verifier rejects each broken invariant and names the node and its source line."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import VerificationError
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, Node, Provenance, Value, verify
from cuvil_ref.ir.types import TensorType

F2 = TensorType((2,))
PROV = Provenance("relu_1", "block.act", "model.py:41 in forward")


def _node(op: str, ins: list[Value], out: Value, attrs: dict | None = None) -> Node:
    return Node(op, tuple(ins), (out,), attrs or {}, PROV)


def test_a_well_formed_graph_passes() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 2)))
    c = b.constant("c", np.ones(2, np.float32))
    y = b.op("cast", [b.op("add", [x, c])], {"dtype": "f16"})
    verify(Module(b.build([y, x]), "m"))


def test_use_before_definition_names_node_and_source_line() -> None:
    x, y, z = Value("x", F2), Value("y", F2), Value("z", F2)
    graph = Graph((x,), (_node("relu", [z], y), _node("neg", [x], z)), (y,))
    with pytest.raises(VerificationError) as info:
        verify(graph)
    message = str(info.value)
    assert "'%y = relu(%z)'" in message and "%z is not defined before use" in message
    assert "model.py:41 in forward" in message and "module 'block.act'" in message


def test_double_definition_is_not_ssa() -> None:
    x, y = Value("x", F2), Value("y", F2)
    graph = Graph((x,), (_node("relu", [x], y), _node("neg", [x], y)), (y,))
    with pytest.raises(
        VerificationError, match=r"'%y = neg\(%x\)'.*model.py:41.*%y is defined twice"
    ):
        verify(graph)


def test_output_shadowing_an_input_or_constant_is_rejected() -> None:
    x = Value("x", F2)
    with pytest.raises(VerificationError, match="%x is defined twice"):
        verify(Graph((x,), (_node("relu", [x], Value("x", F2)),), (x,)))
    with pytest.raises(VerificationError, match="graph input %x is declared twice"):
        verify(Graph((x, x), (), (x,)))
    with pytest.raises(VerificationError, match="constant %x reuses the name"):
        verify(Graph((x,), (), (x,), {"x": np.zeros(2, np.float32)}))


def test_wrong_output_type_names_the_inferred_type() -> None:
    x = Value("x", F2)
    bad = Value("y", TensorType((3,)))
    with pytest.raises(
        VerificationError, match=r"output %y is typed f32\[3\] but op 'relu' infers"
    ):
        verify(Graph((x,), (_node("relu", [x], bad),), (bad,)))
    wrong_dtype = Value("y", TensorType((2,), DType.f16))
    with pytest.raises(VerificationError, match=r"model.py:41.*typed f16\[2\]"):
        verify(Graph((x,), (_node("relu", [x], wrong_dtype),), (wrong_dtype,)))


def test_input_used_with_another_type_than_its_definition() -> None:
    x = Value("x", F2)
    x_as_f16 = Value("x", TensorType((2,), DType.f16))
    y = Value("y", TensorType((2,), DType.f16))
    with pytest.raises(VerificationError, match=r"input %x has type f16\[2\] here but f32\[2\]"):
        verify(Graph((x,), (_node("relu", [x_as_f16], y),), (y,)))


def test_layout_tags_on_outputs_are_annotations() -> None:
    x = Value("x", TensorType((1, 2, 2, 3)))
    y = Value("y", TensorType((1, 2, 2, 3), layout="NHWC"))
    verify(Graph((x,), (_node("relu", [x], y),), (y,)))


@pytest.mark.parametrize(
    "attrs, expected",
    [({"dtype": "f99"}, "attribute 'dtype' must be a dtype name"),
     ({"dtype": "f16", "dtyp": 1}, "has no attribute 'dtyp'"),
     ({}, "attribute 'dtype' is required")],
)  # fmt: skip
def test_bad_attributes_are_rejected(attrs: dict, expected: str) -> None:
    x, y = Value("x", F2), Value("y", TensorType((2,), DType.f16))
    with pytest.raises(VerificationError) as info:
        verify(Graph((x,), (_node("cast", [x], y, attrs),), (y,)))
    assert expected in str(info.value)
    assert str(info.value).startswith("'%y = cast(%x)' (module 'block.act'")


def test_attributes_must_be_normalized() -> None:
    x = Value("x", F2)
    y = Value("y", F2)
    with pytest.raises(VerificationError, match="not normalized"):
        verify(Graph((x,), (_node("softmax", [x], y),), (y,)))  # default axis left out
    verify(Graph((x,), (_node("softmax", [x], y, {"axis": -1}),), (y,)))


def test_unknown_op_names_node_and_suggests() -> None:
    x, y = Value("x", F2), Value("y", F2)
    with pytest.raises(VerificationError, match=r"'%y = rleu\(%x\)'.*unknown op 'rleu'.*'relu'"):
        verify(Graph((x,), (_node("rleu", [x], y),), (y,)))


def test_wrong_arity_and_output_count() -> None:
    x, y = Value("x", F2), Value("y", F2)
    with pytest.raises(VerificationError, match="op 'add' takes 2 inputs"):
        verify(Graph((x,), (_node("add", [x], y),), (y,)))
    two = Node("relu", (x,), (y, Value("z", F2)), {}, PROV)
    with pytest.raises(VerificationError, match="2 outputs but op 'relu' gives 1"):
        verify(Graph((x,), (two,), (y,)))


def test_undefined_graph_output() -> None:
    x = Value("x", F2)
    with pytest.raises(VerificationError, match="graph output %nope is never defined"):
        verify(Graph((x,), (), (Value("nope", F2),)))
