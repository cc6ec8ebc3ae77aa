"""Converters for ONNX's transformer ops: ``Attention`` (opset 23/24) and ``RotaryEmbedding``.

``Attention``: 3-D inputs ``(B, S, H * D)`` are split into heads; ``past_key``/``past_value``
are concatenated before the new keys and values (and returned as ``present_*``); K and V heads
repeat for grouped-query attention; ``scale`` (default ``1/sqrt(D)``) multiplies Q and K by its
square root each, as ONNX's reference does; then ``softcap * tanh(qk / softcap)``, the mask (a
bool mask is 0 / -inf, a mask shorter than the keys is padded with -inf), the causal mask
(query i sees keys up to ``past + i``), ``softmax`` (in ``softmax_precision``) and the product
with V.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import static_dims
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _heads(cx: OnnxContext, x: Value, heads: int | None, what: str) -> Value:
    if x.type.rank == 4:
        return x
    if heads is None:
        raise cx.error(f"3-D {what} needs the q_num_heads and kv_num_heads attributes")
    b, s, hidden = static_dims(cx, x, "Attention")
    y = cx.op("reshape", [x], shape=(b, s, heads, hidden // heads))
    return cx.op("permute", [y], perm=(0, 2, 1, 3))


@onnx_op(TABLE, "Attention", 23, 24)
def attention(cx: OnnxContext, node: OnnxNode) -> Sequence[Value | None]:
    from cuvil_ref.frontend.onnx.importer import dtype_of

    q, k, v = node.inputs[0], node.inputs[1], node.inputs[2]
    assert q is not None and k is not None and v is not None
    mask, past_k, past_v = node.input(3), node.input(4), node.input(5)
    nonpad = node.input(6)
    three_d = q.type.rank == 3
    qh = node.attr("q_num_heads")
    kvh = node.attr("kv_num_heads")
    q = _heads(cx, q, qh, "Q")
    k = _heads(cx, k, kvh, "K")
    v = _heads(cx, v, kvh, "V")
    dt = q.type.dtype
    b, hq, sq, d = static_dims(cx, q, "Attention")
    scale = node.attr("scale")
    scale = 1 / math.sqrt(d) if scale is None else float(scale)
    root = cx.scalar(math.sqrt(scale), dt)
    if past_k is not None:
        k = cx.op("concat", [past_k, k], axis=2)
    if past_v is not None:
        v = cx.op("concat", [past_v, v], axis=2)
    present_k, present_v = k, v
    skv = static_dims(cx, k, "Attention")[2]
    past = static_dims(cx, past_k, "Attention")[2] if past_k is not None else 0
    hk = static_dims(cx, k, "Attention")[1]
    if hk != hq:
        if hq % hk:
            raise cx.error(f"{hq} query heads do not share {hk} key/value heads evenly")
        index = cx.constant(np.repeat(np.arange(hk), hq // hk).astype(np.int64), "kv_heads")
        k = cx.op("index_select", [k, index], axis=1)
        v = cx.op("index_select", [v, index], axis=1)
    qk = cx.op(
        "matmul",
        [cx.op("mul", [q, root]), cx.op("mul", [cx.op("permute", [k], perm=(0, 1, 3, 2)), root])],
    )
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:
        cap = cx.scalar(softcap, dt)
        qk = cx.op("mul", [cx.op("tanh", [cx.op("div", [qk, cap])]), cap])
    qk_out = qk
    bias = None
    if mask is not None:
        width = mask.type.shape[-1]
        if isinstance(width, int) and width < skv:
            fill = 0.0 if mask.type.dtype == DType.bool else float("-inf")
            mask = cx.op("pad", [mask], pads=(0, skv - width), value=fill)
        if mask.type.dtype == DType.bool:
            mask = cx.op("where", [mask, cx.scalar(0, dt), cx.scalar(-np.inf, dt)])
        bias = mask
    if int(node.attr("is_causal", 0)):
        tri = np.zeros((sq, skv), dtype=dt.numpy)
        tri[:, past:] = np.where(np.triu(np.ones((sq, skv - past)), k=1) == 1, -np.inf, 0)
        causal = cx.constant(tri, "causal_mask")
        bias = causal if bias is None else cx.op("add", [bias, causal])
    if nonpad is not None:
        keep = cx.op(
            "lt",
            [
                cx.constant(np.arange(skv, dtype=np.int64), "kv_positions"),
                cx.op("reshape", [cx.cast(nonpad, DType.i64)], shape=(b, 1, 1, 1)),
            ],
        )
        pad = cx.op("where", [keep, cx.scalar(0, dt), cx.scalar(-np.inf, dt)])
        bias = pad if bias is None else cx.op("add", [bias, pad])
    scores = qk if bias is None else cx.op("add", [qk, bias])
    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode == 2:
        qk_out = scores
    precision = node.attr("softmax_precision")
    sdt = dtype_of(int(precision), "softmax_precision") if precision else dt
    probs = cx.op("softmax", [cx.cast(scores, sdt)], axis=-1)
    if mode == 3:
        qk_out = probs
    y = cx.cast(cx.op("matmul", [probs, cx.cast(v, sdt)]), dt)
    if three_d:
        y = cx.op("permute", [y], perm=(0, 2, 1, 3))
        y = cx.op("reshape", [y], shape=(b, sq, -1))
    return [y, present_k, present_v, cx.cast(qk_out, dt)]


@onnx_op(TABLE, "RotaryEmbedding", 23)
def rotary_embedding(cx: OnnxContext, node: OnnxNode) -> Value:
    """Rotate pairs of the first ``rotary_embedding_dim`` features of each head by the cached
    angles at ``position_ids``: ``(x1 cos - x2 sin, x2 cos + x1 sin)``, pairs taken as halves
    or (``interleaved=1``) as neighbours. 3-D input is ``(B, S, H * D)`` with ``num_heads``."""
    x, cos, sin, pos = node.inputs[0], node.inputs[1], node.inputs[2], node.input(3)
    assert x is not None and cos is not None and sin is not None
    dims = static_dims(cx, x, "RotaryEmbedding")
    three_d = len(dims) == 3
    if three_d:
        heads = int(node.attr("num_heads", 0))
        if not heads:
            raise cx.error("3-D input needs the num_heads attribute")
        b, s, hidden = dims
        x4 = cx.op(
            "permute",
            [cx.op("reshape", [x], shape=(b, s, heads, hidden // heads))],
            perm=(0, 2, 1, 3),
        )
    else:
        x4 = x
    b, h, s, d = static_dims(cx, x4, "RotaryEmbedding")
    rot = int(node.attr("rotary_embedding_dim", 0)) or d
    if pos is not None:  # caches are (max_pos, rot/2), indexed by position: (B, S, rot/2)
        flat = cx.op("reshape", [cx.cast(pos, DType.i64)], shape=(-1,))
        cos = cx.op("reshape", [cx.op("index_select", [cos, flat], axis=0)], shape=(b, s, -1))
        sin = cx.op("reshape", [cx.op("index_select", [sin, flat], axis=0)], shape=(b, s, -1))
    cos = cx.op("unsqueeze", [cx.op("slice", [cos], axis=-1, start=0, end=rot // 2)], axis=1)
    sin = cx.op("unsqueeze", [cx.op("slice", [sin], axis=-1, start=0, end=rot // 2)], axis=1)
    part = cx.op("slice", [x4], axis=3, start=0, end=rot)
    if int(node.attr("interleaved", 0)):
        x1 = cx.op("slice", [part], axis=3, start=0, end=rot, step=2)
        x2 = cx.op("slice", [part], axis=3, start=1, end=rot, step=2)
    else:
        x1 = cx.op("slice", [part], axis=3, start=0, end=rot // 2)
        x2 = cx.op("slice", [part], axis=3, start=rot // 2, end=rot)
    r1 = cx.op("sub", [cx.op("mul", [x1, cos]), cx.op("mul", [x2, sin])])
    r2 = cx.op("add", [cx.op("mul", [x2, cos]), cx.op("mul", [x1, sin])])
    if int(node.attr("interleaved", 0)):
        both = cx.op(
            "concat", [cx.op("unsqueeze", [r1], axis=4), cx.op("unsqueeze", [r2], axis=4)], axis=4
        )
        rotated = cx.op("reshape", [both], shape=(b, h, s, rot))
    else:
        rotated = cx.op("concat", [r1, r2], axis=3)
    if rot < d:
        rotated = cx.op("concat", [rotated, cx.op("slice", [x4], axis=3, start=rot, end=d)], axis=3)
    if three_d:
        rotated = cx.op(
            "reshape", [cx.op("permute", [rotated], perm=(0, 2, 1, 3))], shape=tuple(dims)
        )
    return rotated


__all__ = ["TABLE"]
