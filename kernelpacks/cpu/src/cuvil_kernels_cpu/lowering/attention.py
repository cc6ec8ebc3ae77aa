"""Attention scores folded into their softmax: ``mul``/``div`` by a scalar and ``where`` with a
mask are computed by the softmax step itself.

A captured ``scaled_dot_product_attention`` (and the usual hand-written attention) reaches the
IR as ``s = q @ k^T``, ``s * scale`` (or ``s / sqrt(d)``), ``where(mask, s, -inf)``, then
``softmax(s, axis=-1)``. Lowered one node at a time that is three passes over the
``[batch, heads, seq, seq]`` scores, measured on BERT-base (seq 128, 2 threads) at 47, 38 and
298 us per layer. :func:`plan` finds the chains before lowering; the softmax lowering then emits
one :func:`cuvil_kernels_cpu.kernels.softmax.softmax_scores` step, and the absorbed nodes emit
nothing. The step computes every score with the same single IEEE operation as the pointwise
step it replaces, so the result is bit-identical to the unfused program.

A producer is absorbed only when the softmax is its one user and its value is not a partition
output; the scale must be a one-element float32 constant (either operand of ``mul``, the
divisor of ``div``), ``where``'s other branch a one-element float32 constant, and the mask
``bool`` and broadcast over leading axes only (an ``[S, S]`` causal mask, a ``[B, 1, 1, S]``
padding mask is not: it stays a pointwise step). A constant mask that keeps every score is
dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value

#: scale operations (the kernel's codes)
SCALE_NONE, SCALE_MUL, SCALE_DIV = 0, 1, 2


@dataclass(frozen=True)
class Scores:
    """How a softmax's input is made from ``source`` (see the module docstring)."""

    source: Value
    scale: float = 1.0
    scale_op: int = SCALE_NONE
    mask: Value | None = None
    fill: float = 0.0
    keep: bool = True
    absorbed: tuple[str, ...] = ()


ShapeOf = Callable[[Value], tuple[int, ...]]


class _Graph:
    """What :func:`plan` needs to know of the partition being lowered."""

    def __init__(self, graph: Graph, shape_of: ShapeOf) -> None:
        self.producer = graph.producers()
        self.users = graph.users()
        self.outputs = {v.name for v in graph.outputs}
        self.constants = graph.constants
        self.shape_of = shape_of

    def sole_input_of_one(self, value: Value, op: tuple[str, ...]) -> Node | None:
        """``value``'s producer when it is one of ``op`` and ``value`` feeds only one node."""
        node = self.producer.get(value.name)
        if node is None or node.op not in op or value.name in self.outputs:
            return None
        return node if len(self.users.get(value.name, ())) == 1 else None

    def scalar(self, value: Value) -> float | None:
        array = self.constants.get(value.name)
        if array is None or array.size != 1 or array.dtype != np.float32:
            return None
        return float(array.reshape(()))


def _f32(v: Value) -> bool:
    return bool(v.type.dtype.numpy == np.float32)


def plan(graph: Graph, shape_of: ShapeOf) -> dict[str, Scores]:
    """Recipes by softmax output name, for every last-axis float32 softmax with a foldable
    producer chain; ``shape_of(value)`` gives a value's bound shape."""
    g = _Graph(graph, shape_of)
    found: dict[str, Scores] = {}
    for node in graph.nodes:
        x = node.inputs[0] if node.inputs else None
        if node.op not in ("softmax", "log_softmax") or x is None or not _f32(x):
            continue
        if x.type.rank == 0 or node.attrs["axis"] % x.type.rank != x.type.rank - 1:
            continue
        recipe = _fold(g, x)
        if recipe is not None and recipe.absorbed:
            found[node.outputs[0].name] = recipe
    return found


def _fold(g: _Graph, x: Value) -> Scores | None:
    shape = g.shape_of(x)
    absorbed: list[str] = []
    mask, fill, keep = None, 0.0, True
    where = g.sole_input_of_one(x, ("where",))
    if where is not None and len(where.inputs) == 3 and _mask_ok(g, where.inputs[0], shape):
        cond, a, b = where.inputs
        for keeps, scores, other in ((True, a, b), (False, b, a)):
            value = g.scalar(other)
            if value is not None and _f32(scores) and g.shape_of(scores) == shape:
                fill, keep, x = value, keeps, scores
                absorbed.append(where.outputs[0].name)
                const = g.constants.get(cond.name)
                mask = None if const is not None and bool(np.all(const == keep)) else cond
                break
    scale, scale_op = 1.0, SCALE_NONE
    scaling = g.sole_input_of_one(x, ("mul", "div"))
    if scaling is not None and len(scaling.inputs) == 2:
        for pos in (1, 0) if scaling.op == "mul" else (1,):
            value = g.scalar(scaling.inputs[pos])
            other = scaling.inputs[1 - pos]
            if value is not None and _f32(other) and g.shape_of(other) == shape:
                scale, scale_op = value, SCALE_MUL if scaling.op == "mul" else SCALE_DIV
                absorbed.append(scaling.outputs[0].name)
                x = other
                break
    if not absorbed:
        return None
    return Scores(x, scale, scale_op, mask, fill, keep, tuple(absorbed))


def _mask_ok(g: _Graph, cond: Value, shape: tuple[int, ...]) -> bool:
    """``cond`` is bool and broadcast over leading axes only (or a constant: any broadcast)."""
    if cond.type.dtype.numpy != np.bool_ or cond.type.rank > len(shape):
        return False
    if cond.name in g.constants:
        return True
    pad = (1,) * (len(shape) - cond.type.rank) + g.shape_of(cond)
    lead = _leading_ones(pad)
    return tuple(pad[lead:]) == tuple(shape[lead:])


def _leading_ones(shape: tuple[int, ...]) -> int:
    """How many leading axes of a mask's shape (padded to the scores' rank) are 1 -- the axes
    it is broadcast over; the last axis is never counted."""
    lead = 0
    while lead < len(shape) - 1 and shape[lead] == 1:
        lead += 1
    return lead


def mask_table(cond: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A constant mask as the kernel's ``[P, L]`` table: score row ``r`` uses row ``r % P``."""
    pad = cond.reshape((1,) * (len(shape) - cond.ndim) + cond.shape)
    lead = _leading_ones(pad.shape)
    tail = tuple(shape[lead:])
    table = np.broadcast_to(pad.reshape(pad.shape[lead:]), tail)
    return np.ascontiguousarray(table).reshape(math.prod(tail[:-1]), tail[-1])
