"""Converters for ONNX's recurrent layers: ``RNN``, ``GRU`` and ``LSTM``, unrolled over the
(static) sequence length into matmuls and gate arithmetic.

The input projection ``X @ W^T + Wb + Rb`` is one matmul over the whole sequence; each step adds
``H @ R^T`` and applies the gate equations of the ONNX spec (gate order: GRU ``z, r, h``; LSTM
``i, o, f, c``; peepholes ``i, o, f``), with ``clip``, ``linear_before_reset`` (GRU),
``input_forget`` (LSTM) and the ``activations`` attribute. ``sequence_lens``: past its length
a sequence keeps its state and outputs zeros; the reverse direction runs over each sequence's
own steps reversed. ``layout=1`` is batch-major.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import static_dims
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}
Act = Callable[[Value], Value]


def _activation(cx: OnnxContext, name: str, alpha: float | None, beta: float | None) -> Act:
    def s(v: Value, x: float) -> Value:
        return cx.scalar(x, v.type.dtype)

    key = name.lower()
    if key == "tanh":
        return lambda v: cx.op("tanh", [v])
    if key == "sigmoid":
        return lambda v: cx.op("sigmoid", [v])
    if key == "relu":
        return lambda v: cx.op("relu", [v])
    if key == "leakyrelu":
        return lambda v: cx.op("leaky_relu", [v], negative_slope=alpha if alpha else 0.01)
    if key == "elu":
        return lambda v: cx.op("elu", [v], alpha=alpha if alpha is not None else 1.0)
    if key == "softsign":
        return lambda v: cx.op("div", [v, cx.op("add", [cx.op("abs", [v]), s(v, 1.0)])])
    if key == "softplus":
        return lambda v: cx.op("softplus", [v])
    if key == "hardsigmoid":
        a, b = (alpha if alpha is not None else 0.2), (beta if beta is not None else 0.5)
        return lambda v: cx.op(
            "clamp", [cx.op("add", [cx.op("mul", [v, s(v, a)]), s(v, b)])], min=0.0, max=1.0
        )
    if key == "affine":
        a, b = (alpha if alpha is not None else 1.0), (beta if beta is not None else 0.0)
        return lambda v: cx.op("add", [cx.op("mul", [v, s(v, a)]), s(v, b)])
    if key == "scaledtanh":
        a, b = (alpha if alpha is not None else 1.0), (beta if beta is not None else 1.0)
        return lambda v: cx.op("mul", [cx.op("tanh", [cx.op("mul", [v, s(v, b)])]), s(v, a)])
    if key == "thresholdedrelu":
        a = alpha if alpha is not None else 1.0
        return lambda v: cx.op("where", [cx.op("gt", [v, s(v, a)]), v, s(v, 0.0)])
    raise cx.error(f"activation {name!r} is not supported")


def _activations(cx: OnnxContext, node: OnnxNode, defaults: Sequence[str], dirs: int) -> list[Act]:
    names = [str(n) for n in node.attr("activations", list(defaults) * dirs)]
    alphas = list(node.attr("activation_alpha", []))
    betas = list(node.attr("activation_beta", []))
    out = []
    for i, n in enumerate(names):
        alpha = float(alphas[i]) if i < len(alphas) else None
        beta = float(betas[i]) if i < len(betas) else None
        out.append(_activation(cx, n, alpha, beta))
    return out


def _slice(cx: OnnxContext, v: Value, axis: int, i: int, size: int) -> Value:
    return cx.op("slice", [v], axis=axis, start=i * size, end=(i + 1) * size)


def _reverse_by_length(cx: OnnxContext, x: Value, lens: Value | None, steps: int) -> Value:
    """``x`` (seq, batch, ...) with each sequence's first ``lens[b]`` steps reversed."""
    if lens is None:
        index = np.arange(steps - 1, -1, -1, dtype=np.int64)
        return cx.op("index_select", [x, cx.constant(index, "reverse")], axis=0)
    dims = static_dims(cx, x, "the recurrent layer")
    t = cx.constant(np.arange(steps, dtype=np.int64).reshape(steps, 1, 1), "steps")
    n = cx.op("reshape", [cx.cast(lens, DType.i64)], shape=(1, dims[1], 1))
    flipped = cx.op("sub", [cx.op("sub", [n, cx.scalar(1, DType.i64)]), t])
    index = cx.op("where", [cx.op("lt", [t, n]), flipped, t])
    return cx.op("gather", [x, cx.op("expand", [index], shape=tuple(dims))], axis=0)


def recurrent(cx: OnnxContext, node: OnnxNode, kind: str) -> Sequence[Value | None]:
    x, w, r = node.inputs[0], node.inputs[1], node.inputs[2]
    assert x is not None and w is not None and r is not None
    b, lens, h0 = node.input(3), node.input(4), node.input(5)
    c0 = node.input(6) if kind == "lstm" else None
    peep = node.input(7) if kind == "lstm" else None
    layout = int(node.attr("layout", 0))
    if layout:
        x = cx.op("permute", [x], perm=(1, 0, 2))
        h0 = cx.op("permute", [h0], perm=(1, 0, 2)) if h0 is not None else None
        c0 = cx.op("permute", [c0], perm=(1, 0, 2)) if c0 is not None else None
    steps, batch, _ = static_dims(cx, x, node.op_type)
    hidden = int(node.attr("hidden_size"))
    direction = str(node.attr("direction", "forward"))
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"rnn": 1, "gru": 3, "lstm": 4}[kind]
    defaults = {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}
    acts = _activations(cx, node, defaults[kind], dirs)
    per = len(defaults[kind])
    clip = node.attr("clip")
    dt = x.type.dtype
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd = cx.op("squeeze", [_slice(cx, w, 0, d, 1)], axes=(0,))  # (G*H, in)
        rd = cx.op("squeeze", [_slice(cx, r, 0, d, 1)], axes=(0,))  # (G*H, H)
        xd = _reverse_by_length(cx, x, lens, steps) if reverse else x
        proj = cx.op("matmul", [xd, cx.op("permute", [wd], perm=(1, 0))])  # (seq, B, G*H)
        rb = None
        if b is not None:
            bd = cx.op("squeeze", [_slice(cx, b, 0, d, 1)], axes=(0,))
            proj = cx.op("add", [proj, _slice(cx, bd, 0, 0, gates * hidden)])
            rb = _slice(cx, bd, 0, 1, gates * hidden)
        rt = cx.op("permute", [rd], perm=(1, 0))
        zeros = cx.constant(np.zeros((batch, hidden), dt.numpy), "zeros")
        h = cx.op("squeeze", [_slice(cx, h0, 0, d, 1)], axes=(0,)) if h0 is not None else zeros
        c = cx.op("squeeze", [_slice(cx, c0, 0, d, 1)], axes=(0,)) if c0 is not None else zeros
        pd = cx.op("squeeze", [_slice(cx, peep, 0, d, 1)], axes=(0,)) if peep is not None else None
        act = acts[d * per : (d + 1) * per]
        outs = []
        for t in range(steps):
            xt = cx.op("squeeze", [_slice(cx, proj, 0, t, 1)], axes=(0,))
            h_new, c_new = _step(cx, node, kind, xt, h, c, rt, rb, pd, act, hidden, clip)
            if lens is not None:
                alive = cx.op(
                    "gt",
                    [
                        cx.op("reshape", [cx.cast(lens, DType.i64)], shape=(batch, 1)),
                        cx.scalar(t, DType.i64),
                    ],
                )
                h_new = cx.op("where", [alive, h_new, h])
                if c_new is not None:
                    c_new = cx.op("where", [alive, c_new, c])
                outs.append(cx.op("where", [alive, h_new, zeros]))
            else:
                outs.append(h_new)
            h = h_new
            c = c_new if c_new is not None else c
        y = cx.op("concat", [cx.op("unsqueeze", [o], axis=0) for o in outs], axis=0)
        if reverse:
            y = _reverse_by_length(cx, y, lens, steps)
        ys.append(cx.op("unsqueeze", [y], axis=1))  # (seq, 1, B, H)
        hs.append(cx.op("unsqueeze", [h], axis=0))
        cs.append(cx.op("unsqueeze", [c], axis=0))
    y_all = ys[0] if dirs == 1 else cx.op("concat", ys, axis=1)
    h_all = hs[0] if dirs == 1 else cx.op("concat", hs, axis=0)
    c_all = cs[0] if dirs == 1 else cx.op("concat", cs, axis=0)
    if layout:
        y_all = cx.op("permute", [y_all], perm=(2, 0, 1, 3))
        h_all = cx.op("permute", [h_all], perm=(1, 0, 2))
        c_all = cx.op("permute", [c_all], perm=(1, 0, 2))
    return [y_all, h_all, c_all] if kind == "lstm" else [y_all, h_all]


def _step(
    cx: OnnxContext,
    node: OnnxNode,
    kind: str,
    xt: Value,
    h: Value,
    c: Value,
    rt: Value,
    rb: Value | None,
    peep: Value | None,
    act: list[Act],
    hidden: int,
    clip: float | None,
) -> tuple[Value, Value | None]:
    def clipped(v: Value) -> Value:
        return v if clip is None else cx.op("clamp", [v], min=-float(clip), max=float(clip))

    def gate(v: Value, i: int) -> Value:
        return _slice(cx, v, 1, i, hidden)

    hr = cx.op("matmul", [h, rt])
    if rb is not None:
        hr = cx.op("add", [hr, rb])
    if kind == "rnn":
        return act[0](clipped(cx.op("add", [xt, hr]))), None
    if kind == "gru":
        f, g = act
        z = f(clipped(cx.op("add", [gate(xt, 0), gate(hr, 0)])))
        r = f(clipped(cx.op("add", [gate(xt, 1), gate(hr, 1)])))
        if int(node.attr("linear_before_reset", 0)):
            hh = cx.op("add", [gate(xt, 2), cx.op("mul", [r, gate(hr, 2)])])
        else:
            rh = cx.op("matmul", [cx.op("mul", [r, h]), _slice(cx, rt, 1, 2, hidden)])
            if rb is not None:
                rh = cx.op("add", [rh, _slice(cx, rb, 0, 2, hidden)])
            hh = cx.op("add", [gate(xt, 2), rh])
        cand = g(clipped(hh))
        one = cx.scalar(1.0, h.type.dtype)
        keep = cx.op("mul", [z, h])
        return cx.op("add", [cx.op("mul", [cx.op("sub", [one, z]), cand]), keep]), None
    f, g, hact = act
    pre = cx.op("add", [xt, hr])

    def peeped(v: Value, i: int, state: Value) -> Value:
        return (
            v
            if peep is None
            else cx.op("add", [v, cx.op("mul", [_slice(cx, peep, 0, i, hidden), state])])
        )

    i_g = f(clipped(peeped(gate(pre, 0), 0, c)))
    f_g = f(clipped(peeped(gate(pre, 2), 2, c)))
    if int(node.attr("input_forget", 0)):
        f_g = cx.op("sub", [cx.scalar(1.0, h.type.dtype), i_g])
    c_new = cx.op("add", [cx.op("mul", [f_g, c]), cx.op("mul", [i_g, g(clipped(gate(pre, 3)))])])
    o_g = f(clipped(peeped(gate(pre, 1), 1, c_new)))
    return cx.op("mul", [o_g, hact(c_new)]), c_new


onnx_op(TABLE, "RNN", 7, 14, 22)(lambda cx, node: recurrent(cx, node, "rnn"))
onnx_op(TABLE, "GRU", 7, 14, 22)(lambda cx, node: recurrent(cx, node, "gru"))
onnx_op(TABLE, "LSTM", 7, 14, 22)(lambda cx, node: recurrent(cx, node, "lstm"))

__all__ = ["TABLE", "recurrent"]
