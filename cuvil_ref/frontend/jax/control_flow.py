"""``lax.cond`` / ``lax.switch`` / ``lax.while_loop`` -> the IR's ``if`` and ``while`` ops.

In a jaxpr they are the primitives ``cond`` and ``while``, whose sub-programs are closed jaxprs:

* ``cond[branches=(b0, b1, ...)] index *operands``: runs ``branches[index]`` (``lax.cond`` passes
  its predicate as an ``int32`` index, so ``b0`` is the false branch; ``lax.switch`` clamps the
  index first). Two branches become one ``if``; more become a chain of ``if`` ops, each
  ``else`` region holding the next test.
* ``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cond_consts *body_consts
  *carried``: the consts become the loop invariants of the ``while`` op (both regions take every
  operand, carried first), and each region reorders them into its jaxpr's own order.

Every sub-program is walked into a region with the same converters as the program itself
(``walker.walk``), so source lines and error messages come out the same inside a region.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Value
from cuvil_ref.ir.types import TensorType

# walker imports this module lazily; the converter type is only named in annotations here.
JaxConverter = Any


def _region(
    cx: JaxConverter, closed: Any, types: Sequence[TensorType], hint: str, order: Sequence[int]
) -> Graph:
    """The region computing closed jaxpr ``closed``; its inputs have ``types`` and the jaxpr's
    invar ``k`` reads region input ``order[k]``."""
    from cuvil_ref.frontend.jax.walker import JaxConverter as Converter
    from cuvil_ref.frontend.jax.walker import walk

    builder = cx.builder.region(list(types), [hint] * len(types))
    inner = Converter(builder)
    args = [builder.inputs[i] for i in order]
    outs = walk(inner, closed.jaxpr, closed.consts, args)
    for i, out in enumerate(outs):
        if not isinstance(out, Value):
            raise CaptureError(f"the {hint} region returns {out!r} as result #{i}, not an array")
    return builder.build(outs)


def cond(
    cx: JaxConverter, index: Value, *operands: Value, branches: Sequence[Any], **_: Any
) -> Any:
    """``cond[branches] index *operands``: ``branches[index](*operands)``."""
    if not branches:
        raise CaptureError("a cond with no branches")
    if index.type.shape != () or index.type.dtype not in (DType.bool, DType.i32, DType.i64):
        raise CaptureError(f"the index of cond has type {index.type}; expected an integer scalar")
    return _chain(cx, index, list(operands), list(branches), 0)


def _chain(
    cx: JaxConverter, index: Value, operands: list[Value], branches: list[Any], first: int
) -> list[Value]:
    """``if index == first: branches[0] else (the rest)``, as regions taking the operands (and,
    while more than two branches remain, the index)."""
    types = [v.type for v in operands]
    ident = list(range(len(operands)))
    if len(branches) == 1:  # lax.switch with one branch: nothing to choose
        from cuvil_ref.frontend.jax.walker import walk

        return walk(cx, branches[0].jaxpr, branches[0].consts, operands)
    if index.type.dtype == DType.bool:  # True selects branch #1, as an int index of 1 would
        if len(branches) != 2:
            raise CaptureError("a cond with a bool index must have exactly two branches")
        pred, then_branch, else_branch = index, branches[1], branches[0]
    elif len(branches) == 2:
        pred = cx.op("ne", [index, cx.scalar(first, index.type.dtype)])
        then_branch, else_branch = branches[1], branches[0]
    else:
        pred = cx.op("eq", [index, cx.scalar(first, index.type.dtype)])
        then_branch, else_branch = branches[0], None
    then = _region(cx, then_branch, types, "then", ident)
    if else_branch is not None:
        other = _region(cx, else_branch, types, "else", ident)
        return list(
            cx.builder.cond(pred, then, other, operands, name="cond", provenance=cx.provenance)
        )
    # More than two branches: the else region takes the index too and tests the next one.
    from cuvil_ref.frontend.jax.walker import JaxConverter as Converter

    builder = cx.builder.region([index.type, *types], ["index", *(["else"] * len(types))])
    inner = Converter(builder)
    inner.eqn, inner.name, inner.provenance = cx.eqn, cx.name, cx.provenance
    rest = _chain(inner, builder.inputs[0], list(builder.inputs[1:]), branches[1:], first + 1)
    then = _region(cx, then_branch, [index.type, *types], "then", [i + 1 for i in ident])
    other = builder.build(rest)
    return list(
        cx.builder.cond(
            pred, then, other, [index, *operands], name="cond", provenance=cx.provenance
        )
    )


def while_(
    cx: JaxConverter,
    *invals: Value,
    cond_jaxpr: Any,
    body_jaxpr: Any,
    cond_nconsts: int,
    body_nconsts: int,
    **_: Any,
) -> list[Value]:
    """``while[...] *cond_consts *body_consts *carried`` -> ``while(*carried, *consts)``."""
    nc, nb = int(cond_nconsts), int(body_nconsts)
    consts, carried = list(invals[: nc + nb]), list(invals[nc + nb :])
    for i, v in enumerate(invals):
        if not isinstance(v, Value):
            raise CaptureError(f"operand #{i} of while_loop is {v!r}, not an array")
    types = [v.type for v in (*carried, *consts)]
    k = len(carried)
    # Region inputs: carried (0..k-1), cond consts (k..k+nc-1), body consts (k+nc..).
    cond_order = [*range(k, k + nc), *range(k)]
    body_order = [*range(k + nc, k + nc + nb), *range(k)]
    cond_region = _region(cx, cond_jaxpr, types, "cond", cond_order)
    body = _region(cx, body_jaxpr, types, "body", body_order)
    if cond_region.outputs[0].type.shape != () and np.prod(cond_region.outputs[0].type.shape) != 1:
        raise CaptureError("the condition of while_loop must return a bool scalar")
    return list(
        cx.builder.while_loop(
            cond_region, body, carried, consts, name="while", provenance=cx.provenance
        )
    )


TABLE = {"cond": cond, "while": while_}
