"""Fold inference batch norms into the conv2d / linear that feeds them.

Requires: a verified graph. Ensures: no ``batch_norm`` whose input is the single-use output of a
``conv2d`` (any groups) or of a rank-2 ``linear`` with constant weight, bias, mean, var and
affine parameters remains; the producer's weight and bias absorb it::

    s = weight_bn / sqrt(var + eps);  W' = W * s[o];  b' = (b - mean) * s + bias_bn

computed in float64 and rounded to the weight's dtype once, so results move only within f32
rounding. A missing conv/linear bias counts as zeros; missing BN weight/bias as ones/zeros.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.passes.base import PassResult
from cuvil_ref.passes.fuse_epilogue import bias_name
from cuvil_ref.passes.rewrite import Match, Op, Rewriter, Rule, Var, apply_rules


def _all_const(m: Match, node: Node, first: int) -> bool:
    return all(m.is_const(v) for v in node.inputs[first:])


def _fold(m: Match, r: Rewriter) -> Value | None:
    prod, bn = m.node("prod"), m.root
    if not (_all_const(m, prod, 1) and _all_const(m, bn, 1)):
        return None
    if prod.op == "linear" and prod.outputs[0].type.rank != 2:
        return None  # batch_norm's channel axis 1 is linear's feature axis only for rank 2
    consts = m.constants
    w = consts[prod.inputs[1].name]
    out_channels = w.shape[0]
    b = consts[prod.inputs[2].name] if len(prod.inputs) > 2 else np.zeros(out_channels)
    mean, var = (consts[v.name].astype(np.float64) for v in bn.inputs[1:3])
    gamma = consts[bn.inputs[3].name] if len(bn.inputs) > 3 else np.ones(out_channels)
    beta = consts[bn.inputs[4].name] if len(bn.inputs) > 4 else np.zeros(out_channels)
    scale = gamma.astype(np.float64) / np.sqrt(var + bn.attrs["eps"])
    shape = (-1,) + (1,) * (w.ndim - 1)
    new_w = (w.astype(np.float64) * scale.reshape(shape)).astype(w.dtype)
    new_b = ((b.astype(np.float64) - mean) * scale + beta.astype(np.float64)).astype(w.dtype)
    if new_b.shape == () or b.shape == ():
        new_b = np.broadcast_to(new_b, (out_channels,)).copy()
    wv = r.constant(prod.inputs[1].name + "_bn", new_w)
    bv = r.constant(bias_name(prod.inputs[1]) + "_bn", new_b)
    layout = bn.outputs[0].type.layout
    return r.op(prod.op, [m["x"], wv, bv], prod.attrs, layout=layout)


RULES: tuple[Rule, ...] = (
    Rule(
        "fold_batchnorm",
        Op(
            "batch_norm",
            Op({"conv2d", "linear"}, Var("x"), name="prod", one_use=True, exact=False),
            exact=False,
        ),
        _fold,
    ),
)


def fold_batchnorm(graph: Graph) -> PassResult:
    return apply_rules(graph, RULES)
