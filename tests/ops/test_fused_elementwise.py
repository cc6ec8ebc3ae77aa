"""fused_elementwise: its program grammar round-trips, keeps symbolic shapes, equals the chain of
registered ops it names, and explains a bad program."""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.errors import IRError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from cuvil_ref.ops.fused_elementwise import format_step, parse_program

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ref(op: str, *args: np.ndarray, **attrs: object) -> np.ndarray:
    opdef = get_op(op)
    return opdef.reference(*args, **opdef.normalize_attrs(attrs))


def test_fused_elementwise_program_round_trip_and_symbolic_shape() -> None:
    steps = [
        format_step("mul", {"rhs": 0.1, "dtype": "f32"}),
        format_step("pow", {"lhs": 2.0, "dtype": "f32"}),
        format_step("maximum", {"rhs": float("-inf"), "dtype": "f32"}),
        format_step("leaky_relu", {"negative_slope": 0.25}),
    ]
    program = "; ".join(steps)
    parsed = parse_program(program)
    assert [p[0] for p in parsed] == ["mul", "pow", "maximum", "leaky_relu"]
    assert parsed[2][2] == (float("-inf"), "f32", "rhs")
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 3)))
    y = b.op("fused_elementwise", [x], {"program": program})
    assert y.type.shape == ("batch", 3)
    xs = rand(4, 3)
    want = ref(
        "leaky_relu",
        np.maximum(ref("pow", np.float32(2.0), xs * np.float32(0.1)), np.float32(-np.inf)),
        negative_slope=0.25,
    )
    np.testing.assert_array_equal(interpret(b.build([y]), [xs])[0], want)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("relu;", "empty step"),
        ("mul(2.0)", "op\\(key=value"),
        ("sum", "not a pointwise op"),
        ("add(rhs=1.0)", "dtype="),
        ("bogus", "unknown op"),
    ],
)
def test_bad_programs_are_explained(program: str, message: str) -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2,)))
    with pytest.raises(IRError, match=message):
        b.op("fused_elementwise", [x], {"program": program})
