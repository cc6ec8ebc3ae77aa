"""Canonicalization: remove no-op reshapes, permutes, casts and identity arithmetic.

Requires: a verified graph. Ensures, as a rewrite table (see ``RULES``):

* ``reshape``/``flatten``/``expand`` to the input's own shape, identity ``permute`` and
  ``transpose(d, d)`` are gone;
* ``permute``/``transpose`` of a ``permute``/``transpose`` is one ``permute`` (or nothing when the
  composition is the identity);
* ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0`` are ``x`` when the constant is
  all ones (zeros) and the result type equals x's type (so the constant neither broadcasts x to a
  bigger shape nor promotes its dtype). ``x + 0`` turns ``-0.0`` into ``+0.0``; they compare equal;
* ``cast`` to x's own dtype is gone; ``cast(cast(x, mid), dst)`` is ``cast(x, dst)`` when every
  value of x's dtype is exact in ``mid`` (a lossless widening), so the second cast sees x itself.

Results are unchanged (up to the sign of zero above).
"""

from __future__ import annotations

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ops import families
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.rewrite import (
    Match,
    Op,
    ReplaceFn,
    Rewriter,
    Rule,
    Var,
    apply_rules,
    is_all,
)


def _same_shape(m: Match, r: Rewriter) -> Value | None:
    x = m["x"]
    return x if m.root.outputs[0].type == x.type else None


def _perm_of(node: Node) -> tuple[int, ...]:
    rank = node.inputs[0].type.rank
    if rank == 0:  # transposing a scalar (dims 0/-1 allowed, as torch) moves nothing
        return ()
    if node.op == "permute":
        return tuple(p % rank for p in node.attrs["perm"])
    perm = list(range(rank))
    a, b = node.attrs["dim0"] % rank, node.attrs["dim1"] % rank
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _identity_perm(m: Match, r: Rewriter) -> Value | None:
    perm = _perm_of(m.root)
    return m["x"] if perm == tuple(range(len(perm))) and _same_shape(m, r) else None


def _compose_perms(m: Match, r: Rewriter) -> Value | None:
    inner, outer = _perm_of(m.node("inner")), _perm_of(m.root)
    perm = tuple(inner[p] for p in outer)  # y[i] = x[inner[outer[i]]]
    x = m["x"]
    if perm == tuple(range(len(perm))):
        return x if x.type == m.root.outputs[0].type else None
    return r.op("permute", [x], {"perm": perm}, layout=m.root.outputs[0].type.layout)


def _identity_const(value: float) -> ReplaceFn:
    def replace(m: Match, r: Rewriter) -> Value | None:
        ok = is_all(m.array("c"), value) and m.root.outputs[0].type == m["x"].type
        return m["x"] if ok else None

    return replace


#: (source, mid) pairs where every value of ``source`` is exact in ``mid``.
LOSSLESS = frozenset(
    {(DType.bool, d) for d in DType}
    | {(DType.f16, DType.f32), (DType.bf16, DType.f32)}
    | {(DType.i8, d) for d in (DType.i32, DType.i64, DType.f16, DType.bf16, DType.f32)}
    | {(DType.u8, d) for d in (DType.i32, DType.i64, DType.f16, DType.bf16, DType.f32)}
    | {(DType.i32, DType.i64)}
)


def _cast_chain(m: Match, r: Rewriter) -> Value | None:
    x, mid = m["x"], m.node("inner").outputs[0].type.dtype
    if (x.type.dtype, mid) not in LOSSLESS:
        return None
    if m.root.outputs[0].type.dtype == x.type.dtype:
        return x if x.type == m.root.outputs[0].type else None
    return r.op("cast", [x], {"dtype": m.root.attrs["dtype"]}, layout=x.type.layout)


_PERMUTES = families.PERMUTES

RULES: tuple[Rule, ...] = (
    Rule("noop_reshape", Op(families.VIEWS | {"expand"}, Var("x")), _same_shape),
    Rule("identity_permute", Op(_PERMUTES, Var("x")), _identity_perm),
    Rule("permute_permute", Op(_PERMUTES, Op(_PERMUTES, Var("x"), name="inner")), _compose_perms),
    Rule(
        "mul_one", Op("mul", Var("x"), Var("c", const=True), commutative=True), _identity_const(1)
    ),
    Rule("div_one", Op("div", Var("x"), Var("c", const=True)), _identity_const(1)),
    Rule(
        "add_zero", Op("add", Var("x"), Var("c", const=True), commutative=True), _identity_const(0)
    ),
    Rule("sub_zero", Op("sub", Var("x"), Var("c", const=True)), _identity_const(0)),
    Rule(
        "cast_same",
        Op("cast", Var("x"), where=lambda n: n.attrs["dtype"] == n.inputs[0].type.dtype.value),
        _same_shape,
    ),
    Rule("cast_cast", Op("cast", Op("cast", Var("x"), name="inner")), _cast_chain),
)


def canonicalize(graph: Graph) -> PassResult:
    return apply_rules(graph, RULES)
