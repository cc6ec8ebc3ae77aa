"""Control flow: ``if`` and ``while``, the ops that hold regions.

A region is a :class:`~cuvil_ref.ir.graph.Graph` of its own (typed inputs, its own constants,
nodes, outputs) and a scope of its own: its nodes read only its inputs, its constants and its
own earlier results. Values of the enclosing graph reach a region only as the op's operands,
bound to the region's inputs in order (MLIR calls such regions "isolated from above"). So a
region is verified, interpreted, optimized, planned and compiled like any other graph.

* ``if(pred, *operands)`` with regions ``@then`` and ``@else``: ``pred`` is a ``bool[]`` scalar;
  both regions take the operands' types and return the same types; the results are those of
  ``then(*operands)`` when ``pred`` is true, else of ``else(*operands)``. Only the chosen region
  runs.
* ``while(*operands) {num_carried = n}`` with regions ``@cond`` and ``@body``: the first ``n``
  operands are the loop-carried values, the rest are loop invariants. Both regions take every
  operand's type; ``cond`` returns one ``bool[]``, ``body`` returns the next carried values with
  exactly the carried types. ``carried = body(*carried, *invariants)`` repeats while
  ``cond(*carried, *invariants)`` is true; the results are the final carried values (the initial
  ones when ``cond`` is false at once). There is no iteration limit: the loop runs until ``cond``
  is false, as in ``torch.while_loop`` and ``jax.lax.while_loop``.

Types must agree exactly (shape, dtype, layout and quantization tags): a region's inputs and the
operands, the two branches' results, the carried values before and after the body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.registry import Attr, OpDef, register

BOOL_SCALAR = TensorType((), DType.bool)

Run = Callable[[Any, Sequence[np.ndarray]], Sequence[np.ndarray]]


def _types(types: Sequence[TensorType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def check_signature(
    op: str, name: str, region: Any, inputs: Sequence[TensorType], what: str
) -> None:
    """The region's parameter types equal ``inputs`` (the operands' types)."""
    got = tuple(v.type for v in region.inputs)
    if got != tuple(inputs):
        raise ShapeError(
            f"op '{op}': region @{name} takes {_types(got)} but {what} are {_types(inputs)}; a "
            "region's parameters have exactly the types of the values bound to them"
        )


def result_types(region: Any) -> tuple[TensorType, ...]:
    return tuple(v.type for v in region.outputs)


def _if_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict, regions: tuple[Any, ...]
) -> tuple[TensorType, ...]:
    pred, operands = types[0], types[1:]
    if pred != BOOL_SCALAR:
        raise ShapeError(
            f"op 'if': the predicate is {pred}; it must be a bool[] scalar (compare, then "
            "reshape to [] where a one-element tensor decides)"
        )
    then, other = regions
    check_signature("if", "then", then, operands, "the operands")
    check_signature("if", "else", other, operands, "the operands")
    a, b = result_types(then), result_types(other)
    if a != b:
        raise ShapeError(
            f"op 'if': region @then returns {_types(a)} but @else returns {_types(b)}; both "
            "branches must give results of the same types"
        )
    return a


def _if(pred: np.ndarray, *operands: np.ndarray, regions: tuple[Any, ...], run: Run) -> Any:
    """results = then(*operands) if pred else else(*operands)."""
    return tuple(run(regions[0] if bool(pred) else regions[1], operands))


def _while_infer(
    types: tuple[TensorType, ...], attrs: FrozenDict, regions: tuple[Any, ...]
) -> tuple[TensorType, ...]:
    n = attrs["num_carried"]
    if not 1 <= n <= len(types):
        raise ShapeError(
            f"op 'while': num_carried = {n} but it has {len(types)} operands (the carried "
            "values come first; at least one)"
        )
    cond, body = regions
    check_signature("while", "cond", cond, types, "the operands")
    check_signature("while", "body", body, types, "the operands")
    if result_types(cond) != (BOOL_SCALAR,):
        raise ShapeError(
            f"op 'while': region @cond returns {_types(result_types(cond))}; it must return one "
            "bool[] scalar"
        )
    carried = types[:n]
    if result_types(body) != carried:
        raise ShapeError(
            f"op 'while': region @body returns {_types(result_types(body))} but the carried "
            f"values are {_types(carried)}; carried values keep their types"
        )
    return carried


def _while(*operands: np.ndarray, regions: tuple[Any, ...], run: Run, num_carried: int) -> Any:
    """carried = body(*carried, *invariants) while cond(*carried, *invariants)."""
    cond, body = regions
    carried = list(operands[:num_carried])
    invariants = list(operands[num_carried:])
    while bool(run(cond, [*carried, *invariants])[0]):
        carried = list(run(body, [*carried, *invariants]))
    return tuple(carried)


register(
    OpDef(
        name="if",
        inputs=("pred", "*operands?"),
        infer=_if_infer,
        reference=_if,
        doc=(
            "results = then(*operands) if pred else else(*operands); pred is a bool[] scalar, "
            "both regions take the operands' types and return the same types, only the chosen "
            "one runs"
        ),
        category="control_flow",
        num_outputs=-1,
        regions=("then", "else"),
    )
)

register(
    OpDef(
        name="while",
        inputs=("*operands",),
        attrs=(Attr("num_carried", "int", doc="the leading operands that are loop-carried"),),
        infer=_while_infer,
        reference=_while,
        doc=(
            "carried = body(*carried, *invariants) while cond(*carried, *invariants); results: "
            "the final carried values (cond returns a bool[] scalar; body returns the carried "
            "types)"
        ),
        category="control_flow",
        num_outputs=-1,
        regions=("cond", "body"),
    )
)
