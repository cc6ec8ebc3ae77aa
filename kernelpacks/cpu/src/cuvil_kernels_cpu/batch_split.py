"""Batch streams: a partition whose images are independent, run as sub-batches side by side.

With a batch of ``N`` and ``T`` threads, the default runs every layer over all ``N`` images,
its work split among the threads, and the threads meet after each layer. For a network whose
layers are memory-bound (MobileNetV2's depthwise and narrow 1x1 layers), the batch's
activations do not fit the caches and each layer streams them from memory. Splitting the batch
instead -- ``T`` streams, each running the whole partition single-threaded over its own
sub-batch -- keeps one image's activations in cache and needs no meeting between layers
(OpenVINO's "throughput streams" are the same idea). It costs weight traffic (each stream reads
every weight) and smaller GEMMs, so it pays only where activations, not weights, dominate; the
executable measures both once (``batch_split="auto"``) or is told (``"on"``, ``"off"``).

A split is legal when no value mixes images: :func:`rebatch` proves it op by op -- every value
keeps the batch as its dim 0, every op is one that computes each image from that image alone
(the rule of its family below), constants that broadcast are the same for every image -- and
then re-infers every node's types for the sub-batch, which must equal the original with dim 0
replaced. Anything else declines with the reason, and the partition runs whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import families
from cuvil_ref.ops.registry import get_op


class NotSplittable(Exception):
    """Why a partition cannot be run as sub-batches (the message is the reason)."""


#: Families whose ops act element by element (broadcasting constants aside).
_POINTWISE = frozenset({"unary", "binary", "select", "divide", "program", "requantize"})
#: Families that compute each image from that image and constant weights.
_PER_IMAGE = frozenset(
    {"conv2d", "pool2d", "adaptive_pool2d", "qpool", "linear", "qgemm", "batch_norm",
     "group_norm", "epilogue"}
)  # fmt: skip
#: Ops whose second operand may be a non-constant batched matrix (batched matmul).
_MATMULS = frozenset({"matmul", "fused_matmul", "qmatmul"})


def _off_batch(axis: Any, rank: int) -> bool:
    """``axis`` (an int or a tuple of ints) names no dim 0."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return bool(axes) and all(isinstance(a, int) and a % rank != 0 for a in axes)


def _rule(node: Node, batched: list[bool], rank: int) -> str | None:
    """Why ``node`` may mix images, or None. ``batched[i]``: input i carries the batch."""
    op = get_op(node.op)
    a = node.attrs
    ins = node.inputs
    if node.regions:
        return "it holds regions"
    if node.op in _MATMULS:
        if not batched[0]:
            return "its first operand is a constant"
        if batched[1] and (ins[1].type.rank != rank or rank < 3):
            return "its second operand is a computed matrix (not a batched product)"
        return None
    if op.family in _POINTWISE or node.op in families.QUANT_ELEMENTWISE:
        for v, b in zip(ins, batched, strict=True):
            if b and v.type.rank != rank:
                return f"operand %{v.name} broadcasts across the batch"
            if not b and v.type.rank == rank and v.type.shape[0] not in (1,):
                return f"constant %{v.name} differs per image"
        return None
    if op.family in _PER_IMAGE:
        return None if batched[0] else "its input is a constant"
    if op.family in ("reduce", "reduce_var"):
        return None if _off_batch(a.get("axes"), rank) else "it reduces over the batch"
    if op.family in ("reduce_arg", "scan", "softmax", "select_k") or node.op == "qconcat":
        return None if _off_batch(a.get("axis"), rank) else "it works along the batch"
    if op.family == "layer_norm":
        return None if len(a["normalized_shape"]) < rank else "it normalizes over the batch"
    if op.family == "quantize":
        axis = a.get("axis")
        return None if axis is None or _off_batch(axis, ins[0].type.rank) else "per-image scales"
    if node.op in families.VIEWS or node.op == "expand":
        return None  # dim 0 kept (checked by the caller): row-major images stay apart
    if node.op == "permute":
        return None if tuple(a["perm"])[0] == 0 else "it moves the batch dim"
    if node.op == "transpose":
        return None if _off_batch((a["dim0"], a["dim1"]), rank) else "it moves the batch dim"
    if node.op in ("slice", "split", "concat"):
        return None if _off_batch(a.get("axis"), rank) else "it works along the batch"
    if node.op == "embedding":
        return None if not batched[1] and batched[0] else "the table is not a constant"
    return f"no batch rule for op '{node.op}'"


def _sub_type(t: TensorType, sub: int) -> TensorType:
    return replace(t, shape=(sub, *t.shape[1:]))


def _sub_attrs(node: Node, batch: int, sub: int) -> Any:
    """A reshape or expand that spells the batch out (``x.view(x.size(0), -1)``) spells the
    sub-batch instead."""
    shape = node.attrs.get("shape") if node.op in ("reshape", "expand") else None
    if shape and shape[0] == batch:
        return node.attrs.replace(shape=(sub, *tuple(shape)[1:]))
    return node.attrs


def rebatch(graph: Graph, batch: int, sub: int) -> Graph:
    """``graph`` for a batch of ``sub`` images instead of ``batch`` (see the module docstring);
    raises :class:`NotSplittable` with the reason."""
    if not graph.inputs or any(v.type.rank == 0 or v.type.shape[0] != batch for v in graph.inputs):
        raise NotSplittable(f"not every input has the batch ({batch}) as its dim 0")
    types: dict[str, TensorType] = {v.name: _sub_type(v.type, sub) for v in graph.inputs}
    nodes = []
    for node in graph.nodes:
        where = f"%{node.outputs[0].name} = {node.op}"
        batched = [v.name in types for v in node.inputs]
        for v in node.outputs:
            if v.type.rank == 0 or v.type.shape[0] != batch:
                raise NotSplittable(f"{where}: output %{v.name} does not keep the batch as dim 0")
        rank = node.outputs[0].type.rank
        reason = _rule(node, batched, rank)
        if reason:
            raise NotSplittable(f"{where}: {reason}")
        attrs = _sub_attrs(node, batch, sub)
        in_types = [types.get(v.name, v.type) for v in node.inputs]
        try:
            got = get_op(node.op).infer_types(in_types, attrs, node.regions)
        except CuvilError as exc:
            raise NotSplittable(f"{where}: {exc}") from exc
        outs = []
        for v, t in zip(node.outputs, got, strict=True):
            want = _sub_type(v.type, sub)
            if (t.shape, t.dtype) != (want.shape, want.dtype):  # (layout: a pass's annotation)
                raise NotSplittable(f"{where}: for {sub} images it gives {t}, not {want}")
            types[v.name] = want
            outs.append(Value(v.name, want))
        nodes.append(
            replace(
                node,
                inputs=tuple(Value(v.name, t) for v, t in zip(node.inputs, in_types, strict=True)),
                outputs=tuple(outs),
                attrs=attrs,
            )  # fmt: skip
        )
    missing = [v.name for v in graph.outputs if v.name not in types]
    if missing:
        raise NotSplittable(f"output %{missing[0]} is not computed from the batch")
    outputs = tuple(Value(v.name, types[v.name]) for v in graph.outputs)
    return graph.replace(
        inputs=tuple(Value(v.name, types[v.name]) for v in graph.inputs), nodes=nodes,
        outputs=outputs,
    )  # fmt: skip


def sub_batches(batch: int, streams: int) -> list[tuple[int, int]]:
    """``batch`` images as ``streams`` near-equal ``[lo, hi)`` ranges (larger ones first)."""
    base, extra = divmod(batch, streams)
    out, lo = [], 0
    for k in range(streams):
        hi = lo + base + (1 if k < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out
