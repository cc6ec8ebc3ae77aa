"""JAX primitives whose XLA semantics differ from the plain IR op of the same name.

* ``div`` on integers truncates toward zero (C), so it is ``trunc_divide``, not ``div``;
* ``cumsum`` keeps its operand's dtype (the IR's ``cumsum`` widens integers to i64, as torch):
  the i64 sums are cast back, which wraps exactly as XLA's fixed-width sums do;
* ``is_finite``, ``reduce_or``/``reduce_and`` on bool compose from ``isnan``/``isinf`` and a count;
* ``rev`` is ``flip``; ``sort`` sorts its first operand (the keys) stably and carries the other
  operands along (``jnp.argsort`` sorts ``(x, iota)``); unlike XLA's total order it puts -0.0
  and +0.0 in their original order (equal values; only the sign bit can tell);
  ``top_k`` is ``topk`` along the last axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.jax.walker import JaxConverter
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value


def _multi(cx: JaxConverter, op: str, inputs: Sequence[Value], **attrs: Any) -> list[Value]:
    return list(
        cx.builder.op_multi(op, list(inputs), attrs, name=cx.name, provenance=cx.provenance)
    )


def div(cx: JaxConverter, a: Value, b: Value, **params: Any) -> Value:
    op = "div" if a.type.dtype.is_float else "trunc_divide"
    return cx.op(op, [a, b])


def cumsum(cx: JaxConverter, x: Value, axis: int, reverse: bool = False) -> Value:
    if reverse:
        x = cx.op("flip", [x], axes=(int(axis),))
    y = cx.op("cumsum", [x], axis=int(axis))
    if y.type.dtype != x.type.dtype:
        y = cx.op("cast", [y], dtype=x.type.dtype.value)
    return cx.op("flip", [y], axes=(int(axis),)) if reverse else y


def is_finite(cx: JaxConverter, x: Value, **params: Any) -> Value:
    bad = cx.op("logical_or", [cx.op("isnan", [x]), cx.op("isinf", [x])])
    return cx.op("logical_not", [bad])


def _bool_reduce(which: str) -> Any:
    def convert(cx: JaxConverter, x: Value, axes: Sequence[int], **params: Any) -> Value:
        if x.type.dtype != DType.bool:
            raise CaptureError(
                f"lax.reduce_{which} on {x.type.dtype.value} (a bitwise reduction) is not "
                "supported by Cuvil; reduce a bool array (jnp.any/jnp.all do)"
            )
        truth = x if which == "or" else cx.op("logical_not", [x])
        count = cx.op("sum", [truth], axes=tuple(int(a) for a in axes), keepdim=False)
        zero = cx.scalar(0, count.type.dtype)
        return cx.op("ne" if which == "or" else "eq", [count, zero])

    return convert


def rev(cx: JaxConverter, x: Value, dimensions: Sequence[int]) -> Value:
    return cx.op("flip", [x], axes=tuple(int(d) for d in dimensions))


def sort(
    cx: JaxConverter, *operands: Value, dimension: int, num_keys: int = 1, **params: Any
) -> list[Value]:
    if int(num_keys) != 1:
        raise CaptureError(
            f"lax.sort with num_keys={num_keys} (lexicographic keys) is not supported by Cuvil; "
            "sort by one key"
        )
    # a stable sort is one of the orders an unstable one may give
    values, order = _multi(cx, "sort", [operands[0]], axis=int(dimension), descending=False)
    rest = [cx.op("gather", [y, order], axis=int(dimension)) for y in operands[1:]]
    return [values, *rest]


def top_k(cx: JaxConverter, x: Value, k: int, **params: Any) -> list[Value]:
    if params.get("axis", -1) not in (-1, x.type.rank - 1):
        raise CaptureError(f"lax.top_k along axis {params['axis']} is not supported by Cuvil")
    values, indices = _multi(cx, "topk", [x], k=int(k), axis=-1, largest=True)
    return [values, cx.op("cast", [indices], dtype="i32")]


TABLE = {
    "div": div,
    "cumsum": cumsum,
    "is_finite": is_finite,
    "reduce_or": _bool_reduce("or"),
    "reduce_and": _bool_reduce("and"),
    "rev": rev,
    "sort": sort,
    "top_k": top_k,
}

__all__ = ["TABLE"]
