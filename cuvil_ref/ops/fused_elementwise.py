"""``fused_elementwise``: a chain of elementwise steps made by the optimizer, run as one op.

The chain is a small program in the ``program`` attribute: steps separated by ``;``, each a
registered unary op with its attributes, or a binary op of :data:`SCALAR_BINARY` with one scalar
operand on either side (grammar in :func:`parse_program`; :func:`format_step` writes a step).
The reference runs the steps' own references from the registry in order, so the fused node
computes what the unfused chain computes; nothing here re-implements arithmetic.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import IRError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType

# The ops composed here must be registered first, whatever order the package imports modules in.
from cuvil_ref.ops import activations, elementwise, families  # noqa: F401
from cuvil_ref.ops.grid import grid, point
from cuvil_ref.ops.registry import Attr, OpDef, get_op, register

#: Binary ops a step may apply with one scalar operand.
SCALAR_BINARY = families.ARITHMETIC


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    raise IRError(f"fused_elementwise: {ast.unparse(node)!r} is not a literal")


def format_step(op: str, attrs: Mapping[str, Any]) -> str:
    """One program step: ``relu``, ``clamp(min=0.0, max=6.0)``, ``mul(rhs=2.0, dtype='f32')``."""
    if not attrs:
        return op
    args = ", ".join(f"{k}={_format_literal(v)}" for k, v in attrs.items())
    return f"{op}({args})"


def _format_literal(v: Any) -> str:
    if isinstance(v, float) and not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return repr(v)


@functools.lru_cache(maxsize=1024)
def parse_program(program: str) -> tuple[tuple[str, FrozenDict, tuple[Any, str, str] | None], ...]:
    """Parse ``step; step; ...`` into (op, normalized attrs, scalar operand or None) triples.

    A step is ``op`` or ``op(key=literal, ...)`` naming a registered elementwise or activation
    op with its attributes. A binary op (add, sub, mul, div, pow, maximum, minimum) takes its
    other operand as a scalar: ``rhs=<v>`` (y = x op v) or ``lhs=<v>`` (y = v op x), plus
    ``dtype='<dtype>'`` of that scalar. Floats are written with ``repr`` (exact), nan/inf bare.
    """
    steps = []
    for text in (s.strip() for s in program.split(";")):
        if not text:
            raise IRError(f"fused_elementwise: empty step in program {program!r}")
        try:
            call = ast.parse(text if "(" in text else text + "()", mode="eval").body
        except SyntaxError as exc:
            raise IRError(f"fused_elementwise: cannot parse step {text!r}: {exc.msg}") from None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
            raise IRError(f"fused_elementwise: step {text!r} must look like op(key=value, ...)")
        op = call.func.id
        kwargs = {k.arg: _literal(k.value) for k in call.keywords if k.arg is not None}
        opdef = get_op(op)
        if opdef.category not in ("elementwise", "activation") or opdef.name == "where":
            raise IRError(f"fused_elementwise: step {text!r}: op '{op}' is not a pointwise op")
        scalar = None
        if op in SCALAR_BINARY:
            sides = [s for s in ("lhs", "rhs") if s in kwargs]
            if len(sides) != 1 or "dtype" not in kwargs:
                raise IRError(
                    f"fused_elementwise: binary step {text!r} needs exactly one of lhs=/rhs= "
                    "and dtype="
                )
            scalar = (kwargs.pop(sides[0]), str(kwargs.pop("dtype")), sides[0])
        steps.append((op, opdef.normalize_attrs(kwargs), scalar))
    return tuple(steps)


def _scalar_array(scalar: tuple[Any, str, str]) -> np.ndarray:
    return np.array(scalar[0], dtype=DType(scalar[1]).numpy)


def _fused_elementwise_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict
) -> tuple[TensorType, ...]:
    t = types[0]
    for op, op_attrs, scalar in parse_program(attrs["program"]):
        opdef = get_op(op)
        if scalar is None:
            (t,) = opdef.infer_types((t,), op_attrs)
        else:
            s = TensorType((), DType(scalar[1]))
            pair = (t, s) if scalar[2] == "rhs" else (s, t)
            (t,) = opdef.infer_types(pair, op_attrs)
    if t.shape != types[0].shape:
        raise ShapeError("fused_elementwise: a step changed the shape")
    return (TensorType(t.shape, t.dtype, types[0].layout),)


def _fused_elementwise(x: np.ndarray, *, program: str) -> np.ndarray:
    """Apply each step's registered reference in order."""
    y = x
    for op, op_attrs, scalar in parse_program(program):
        ref = get_op(op).reference
        if scalar is None:
            y = ref(y, **op_attrs)
        else:
            s = _scalar_array(scalar)
            y = ref(y, s, **op_attrs) if scalar[2] == "rhs" else ref(s, y, **op_attrs)
    return y


_PROGRAMS = (
    "relu",
    "mul(rhs=2.0, dtype='f32'); relu",
    "add(rhs=0.5, dtype='f32'); sigmoid; mul(rhs=3.0, dtype='f32')",
    "neg; exp; tanh",
    "sub(rhs=1.0, dtype='f32'); abs; sqrt",
    "maximum(rhs=0.0, dtype='f32'); minimum(lhs=6.0, dtype='f32')",
)

register(
    OpDef(
        name="fused_elementwise",
        inputs=("x",),
        attrs=(Attr("program", "str", doc="the steps, e.g. \"mul(rhs=2.0, dtype='f32'); relu\""),),
        infer=_fused_elementwise_infer,
        reference=_fused_elementwise,
        doc=(
            "y = f_k(...f_2(f_1(x))) where f_i is step i of `program`: a registered pointwise op "
            "(with its attributes) or a binary op with a scalar operand (rhs: x op v, "
            "lhs: v op x). "
            "Each step has its own op's semantics (dtype promotion, NaN rules); the result equals "
            "the unfused chain bit for bit."
        ),
        category="elementwise",
        family="program",
        # a chain of a few elementwise ops: the errors of its steps add up
        tolerance="ulp:8",
        conformance=grid(
            *(point("program", program=p, shapes=((3, 5),)) for p in _PROGRAMS),
            *(point("edge", program=p, shapes=((4, 6),), values="edge") for p in _PROGRAMS),
        ),
    )
)
