"""Transposes read in place by the batched matmul instead of copied.

Attention splits its heads with ``view`` then ``transpose``/``permute``: ``q`` and ``v`` to
``[B, heads, S, D]`` and ``k`` to ``[B, heads, D, S]``. Lowered as copies that is three passes
over the activations per layer, measured on BERT-base (seq 128, 2 threads) at 43, 35 and 83 us,
before the batched matmul (:mod:`cuvil_kernels_cpu.kernels.bmm`) reads them again -- the right
operand to pack it into panels anyway. A transpose whose every user is such a matmul is
instead a *permuted view* (:meth:`LowerContext.permuted_view`): the matmul's kernels get a
strided array. The right operand may have any strides (the packing reads it in the order its
strides favour); the left one needs its last axis contiguous (the register tile reads rows).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from cuvil_kernels_cpu.lowering.context import strided_view
from cuvil_ref.ir.graph import Graph, Node, Value

PERMUTES = ("transpose", "permute")


def permutation(node: Node) -> tuple[int, ...]:
    """The axis order a ``transpose`` (two axes swapped) or ``permute`` node applies."""
    x = node.inputs[0]
    rank = x.type.rank
    if node.op == "transpose":
        perm = list(range(rank))  # a scalar's transpose is the empty permutation
        if rank:
            d0, d1 = node.attrs["dim0"] % rank, node.attrs["dim1"] % rank
            perm[d0], perm[d1] = perm[d1], perm[d0]
        return tuple(perm)
    return tuple(p % max(1, rank) for p in node.attrs["perm"])


def batched_operand(user: Node, value: Value, shape_of: Callable[[Value], tuple[int, ...]],
                    constants: set[str]) -> bool:  # fmt: skip
    """Whether ``user`` is a ``matmul`` that multiplies two batched activations (the
    :mod:`.gemm` lowering's ``bmm`` path with ``[B, M, K] @ [B, K, N]`` operands) and reads
    ``value`` as one of them -- the left one only once, the right one only once."""
    if user.op not in ("matmul", "fused_matmul") or len(user.inputs) < 2:
        return False
    a, b = user.inputs[0], user.inputs[1]
    if a.name == b.name or b.name in constants or a.type.rank < 3 or b.type.rank < 3:
        return False
    if user.op == "fused_matmul" and user.attrs.get("has_residual"):
        return False
    if shape_of(a)[:-2] != shape_of(b)[:-2] or math.prod(shape_of(a)[:-2]) < 1:
        return False
    return value.name in (a.name, b.name)


def _batch_folds(src: tuple[int, ...], perm: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether the permuted view folds its batch axes into one without a copy (the matmul
    reads it as ``[B, M, K]``)."""
    try:
        strided_view(np.zeros(1, np.float32), (src, perm), (math.prod(shape[:-2]), *shape[-2:]))
    except ValueError:
        return False
    return True


def plan(graph: Graph, shape_of: Callable[[Value], tuple[int, ...]]) -> set[str]:
    """Names of transpose/permute outputs to lower as permuted views."""
    users = graph.users()
    constants = set(graph.constants)
    graph_outputs = {v.name for v in graph.outputs}
    found: set[str] = set()
    for node in graph.nodes:
        if node.op not in PERMUTES or node.inputs[0].name in constants:
            continue
        out = node.outputs[0]
        if out.name in graph_outputs or out.type.dtype.numpy.itemsize != 4 or out.type.rank < 3:
            continue
        if out.type.dtype.numpy.kind != "f":
            continue
        perm = permutation(node)
        uses = users.get(out.name, [])
        if not uses or not _batch_folds(shape_of(node.inputs[0]), perm, shape_of(out)):
            continue
        ok = True
        for user in uses:
            if not batched_operand(user, out, shape_of, constants):
                ok = False
            elif user.inputs[0].name == out.name and perm[-1] != len(perm) - 1:
                ok = False  # the left operand's rows must stay contiguous
        if ok:
            found.add(out.name)
    return found
