"""``Einsum``: an equation becomes diagonals, sums, permutes, reshapes and batched matmuls.

Each operand first takes the diagonal of repeated letters (``ii``) and sums letters that no
other operand and not the output has; then the operands are combined left to right, each pair
as one batched matmul over (shared letters kept) x (letters of one side) x (letters contracted
away); the last step sums what the output drops and permutes to the output's order. ``...``
stands for the same trailing batch dims in every operand; without ``->`` the output is the
letters used once, in alphabetical order (after the ``...`` dims).
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import static_dims
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}
_ELLIPSIS_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse(cx: OnnxContext, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Operand letter strings and the output's, with ``...`` spelled out as capitals."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise cx.error(f"equation {equation!r} has {len(terms)} operands, the node {len(ranks)}")
    widths = []
    for t, r in zip(terms, ranks):
        n = r - len(t.replace("...", ""))
        if n < 0 or (n > 0 and "..." not in t):
            raise cx.error(f"operand {t!r} of {equation!r} does not match its rank {r}")
        widths.append(n if "..." in t else 0)
    ell = max(widths, default=0)
    letters = _ELLIPSIS_LETTERS[:ell]
    ops = [t.replace("...", letters[ell - w :]) for t, w in zip(terms, widths)]
    if arrow:
        out = rhs.replace("...", letters)
    else:
        counts = {c: sum(o.count(c) for o in ops) for o in ops for c in o if c.islower()}
        out = letters + "".join(sorted(c for c, k in counts.items() if k == 1))
    return ops, out


def _diagonal(cx: OnnxContext, x: Value, term: str) -> tuple[Value, str]:
    while True:
        repeated = next((c for c in term if term.count(c) > 1), None)
        if repeated is None:
            return x, term
        a, b = [i for i, c in enumerate(term) if c == repeated][:2]
        dims = static_dims(cx, x, "Einsum")
        rest = [i for i in range(len(term)) if i not in (a, b)]
        x = cx.op("permute", [x], perm=tuple(rest + [a, b]))
        n = dims[a]
        x = cx.op("reshape", [x], shape=(*[dims[i] for i in rest], n * n))
        diag = cx.constant(np.arange(n, dtype=np.int64) * (n + 1), "diagonal")
        x = cx.op("index_select", [x, diag], axis=len(rest))
        term = "".join(term[i] for i in rest) + repeated


def _sum_out(cx: OnnxContext, x: Value, term: str, keep: set[str]) -> tuple[Value, str]:
    drop = tuple(i for i, c in enumerate(term) if c not in keep)
    if not drop:
        return x, term
    return cx.op("sum", [x], axes=drop), "".join(c for c in term if c in keep)


def _pair(
    cx: OnnxContext, a: Value, ta: str, b: Value, tb: str, needed: set[str]
) -> tuple[Value, str]:
    da = dict(zip(ta, static_dims(cx, a, "Einsum")))
    db = dict(zip(tb, static_dims(cx, b, "Einsum")))
    batch = [c for c in ta if c in tb and c in needed]
    contract = [c for c in ta if c in tb and c not in needed]
    only_a = [c for c in ta if c not in tb]
    only_b = [c for c in tb if c not in ta]
    for c in batch + contract:
        if da[c] != db[c]:
            raise cx.error(f"letter {c!r} has sizes {da[c]} and {db[c]}")

    def size(letters: list[str], d: dict[str, int]) -> int:
        return int(np.prod([d[c] for c in letters]))

    pa = cx.op("permute", [a], perm=tuple(ta.index(c) for c in batch + only_a + contract))
    pb = cx.op("permute", [b], perm=tuple(tb.index(c) for c in batch + contract + only_b))
    ma = cx.op("reshape", [pa], shape=(size(batch, da), size(only_a, da), size(contract, da)))
    mb = cx.op("reshape", [pb], shape=(size(batch, db), size(contract, db), size(only_b, db)))
    y = cx.op("matmul", [ma, mb])
    dims = [da[c] for c in batch + only_a] + [db[c] for c in only_b]
    return cx.op("reshape", [y], shape=tuple(dims)), "".join(batch + only_a + only_b)


@onnx_op(TABLE, "Einsum", 12)
def einsum(cx: OnnxContext, node: OnnxNode) -> Value:
    xs = [v for v in node.inputs if v is not None]
    terms, out = parse(cx, str(node.attr("equation")), [v.type.rank for v in xs])
    values = []
    for i, (x, t) in enumerate(zip(xs, terms)):
        x, t = _diagonal(cx, x, t)
        others = set(out).union(*(set(u) for j, u in enumerate(terms) if j != i))
        values.append(_sum_out(cx, x, t, others))
    acc, term = values[0]
    for k, (x, t) in enumerate(values[1:], start=1):
        needed = set(out).union(*(set(u) for u in terms[k + 1 :]))
        acc, term = _pair(cx, acc, term, x, t, needed)
    acc, term = _sum_out(cx, acc, term, set(out))
    if term != out:
        acc = cx.op("permute", [acc], perm=tuple(term.index(c) for c in out))
    return acc


__all__ = ["TABLE", "parse"]
