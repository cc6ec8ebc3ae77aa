"""Converters for ONNX's loss ops: ``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss``
(``log_softmax`` over the class axis, then the same loss).

``loss[n, d..] = -input[n, target[n, d..], d..] * weight[target[n, d..]]``, 0 where
``target == ignore_index``; ``reduction="mean"`` divides the sum by the sum of the weights that
applied (the count of targets that are not ignored, without weights).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def nll(
    cx: OnnxContext,
    node: OnnxNode,
    logp: Value,
    target: Value,
    weight: Value | None,
) -> Value:
    reduction = str(node.attr("reduction", "mean"))
    if reduction not in ("none", "sum", "mean"):
        raise cx.error(f"reduction {reduction!r} is not none, sum or mean")
    dt = logp.type.dtype
    target = cx.cast(target, DType.i64)
    ignore = node.attr("ignore_index")
    valid = None
    if ignore is not None:
        valid = cx.op("ne", [target, cx.scalar(int(ignore), DType.i64)])
        target = cx.op("where", [valid, target, cx.scalar(0, DType.i64)])
    picked = cx.op("gather", [logp, cx.op("unsqueeze", [target], axis=1)], axis=1)
    loss = cx.op("neg", [cx.op("squeeze", [picked], axes=(1,))])
    if weight is not None:
        flat = cx.op("reshape", [target], shape=(-1,))
        w = cx.op(
            "reshape",
            [cx.op("index_select", [weight, flat], axis=0)],
            shape=tuple(target.type.shape),
        )
    else:
        w = None
    if valid is not None:
        mask = cx.cast(valid, dt)
        w = mask if w is None else cx.op("mul", [w, mask])
    if w is not None:
        loss = cx.op("mul", [loss, w])
    if reduction == "none":
        return loss
    total = cx.op("sum", [loss])
    if reduction == "sum":
        return total
    if w is None:
        count = 1
        for d in target.type.shape:
            count *= int(d)
        return cx.op("div", [total, cx.scalar(count, dt)])
    return cx.op("div", [total, cx.op("sum", [w])])


@onnx_op(TABLE, "NegativeLogLikelihoodLoss", 12, 13, 22)
def negative_log_likelihood_loss(cx: OnnxContext, node: OnnxNode) -> Value:
    x, target = node.inputs[0], node.inputs[1]
    assert x is not None and target is not None
    return nll(cx, node, x, target, node.input(2))


@onnx_op(TABLE, "SoftmaxCrossEntropyLoss", 12, 13)
def softmax_cross_entropy_loss(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    x, target = node.inputs[0], node.inputs[1]
    assert x is not None and target is not None
    logp = cx.op("log_softmax", [x], axis=1)
    return [nll(cx, node, logp, target, node.input(2)), logp]


__all__ = ["TABLE", "nll"]
