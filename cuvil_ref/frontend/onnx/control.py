"""Converters for ONNX's control flow, ``If`` and ``Loop``, onto the IR's ``if`` / ``while``
regions, and ``Scan`` (unrolled).

A condition known at import time (a constant, or folded from static shapes) is decided here:
``If`` inlines the chosen branch, and a ``Loop`` whose trip count and conditions fold is
unrolled (so are loops with scan outputs, which grow each iteration and so cannot be carried
values of a ``while``). Otherwise ``If`` becomes an ``if`` op and ``Loop`` a ``while`` op.

ONNX subgraphs read values of the enclosing graphs by name; IR regions are isolated from above.
So each name a branch or body reads from outside becomes an operand of the op, bound to a region
input -- except constants, which are copied into the region so shapes and axes stay static.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value
from cuvil_ref.ir.types import TensorType

TABLE: dict[str, OnnxConverter] = {}

#: Most iterations a Loop is unrolled to at import time.
UNROLL_LIMIT = 1024


def run_graph(cx: OnnxContext, graph: Any, env: dict[str, Value]) -> list[Value]:
    """Convert the nodes of ONNX ``graph`` into ``cx``'s builder, reading and extending ``env``
    (the graph's inputs must be bound in it already); returns the graph's outputs."""
    from onnx import numpy_helper

    from cuvil_ref.frontend.onnx.importer import convert_node
    from cuvil_ref.frontend.onnx.ops import TABLE as ALL

    outer, scope = cx.node, cx.scope
    cx.scope = env  # a nested If/Loop captures from this graph's scope
    try:
        for init in graph.initializer:
            env[init.name] = cx.constant(np.array(numpy_helper.to_array(init)), init.name)
        for node in graph.node:
            convert_node(cx, node, env, cx.opsets, ALL)
    finally:
        cx.node, cx.scope = outer, scope
    missing = [o.name for o in graph.output if o.name not in env]
    if missing:
        raise cx.error(f"subgraph '{graph.name}' outputs {missing}, which no node produces")
    return [env[o.name] for o in graph.output]


def _reads(graph: Any) -> Iterator[str]:
    """Names ``graph``'s nodes (and their nested subgraphs) read from outside it."""
    from onnx import AttributeProto

    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                yield name
        for a in node.attribute:
            subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
            for sub in subs:
                yield from (n for n in _reads(sub) if n not in defined)
        defined.update(node.output)


def _captures(cx: OnnxContext, graphs: Sequence[Any]) -> tuple[list[str], list[str]]:
    """The outer names the graphs read: (run-time values, constants), each sorted."""
    names = sorted({n for g in graphs for n in _reads(g) if n in cx.scope})
    runtime = [n for n in names if cx.array(cx.scope[n]) is None]
    return runtime, [n for n in names if n not in runtime]


def _child(cx: OnnxContext, types: Sequence[TensorType]) -> OnnxContext:
    child = OnnxContext(cx.builder.region(types))
    child.opsets = cx.opsets
    child.node = cx.node
    return child


def _region(
    cx: OnnxContext,
    graph: Any,
    params: Sequence[tuple[str, TensorType]],
    runtime: Sequence[str],
    constants: Sequence[str],
    finish: Any = None,
) -> Any:
    """The IR region of ONNX ``graph``: its inputs are ``params`` (the graph's own inputs) then
    the captured run-time values; captured constants are copied in. ``finish(child, env,
    outputs)`` may rewrite the outputs (a loop's counter and condition)."""
    types = [t for _, t in params] + [cx.scope[n].type for n in runtime]
    child = _child(cx, types)
    env: dict[str, Value] = {}
    inputs = child.builder.inputs
    for (name, _), v in zip(params, inputs):
        env[name] = v
    for name, v in zip(runtime, inputs[len(params) :]):
        env[name] = v
    for name in constants:
        env[name] = child.constant(cx.array(cx.scope[name]), name)
    child.scope = env
    outs = run_graph(child, graph, env)
    if finish is not None:
        outs = finish(child, env, outs)
    return child.builder.build(outs)


def _scalar_bool(cx: OnnxContext, v: Value) -> Value:
    if v.type.dtype != DType.bool:
        v = cx.op("ne", [v, cx.scalar(0, v.type.dtype)])
    return cx.op("reshape", [v], shape=()) if v.type.shape != () else v


@onnx_op(TABLE, "If", 1, 11, 13, 16, 19, 21, 23, 24, 25)
def if_(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """``then_branch`` if the one-element ``cond`` is true, else ``else_branch``."""
    cond = node.inputs[0]
    assert cond is not None
    then, other = node.subgraphs["then_branch"], node.subgraphs["else_branch"]
    known = cx.array(cond)
    if known is not None:
        if known.size != 1:
            raise cx.error(f"If's condition has {known.size} elements; it must have one")
        return run_graph(cx, then if bool(known.reshape(-1)[0]) else other, dict(cx.scope))
    runtime, constants = _captures(cx, [then, other])
    regions = [_region(cx, g, [], runtime, constants) for g in (then, other)]
    a, b = ([v.type for v in r.outputs] for r in regions)
    if a != b:
        shown = ", ".join(f"{x} vs {y}" for x, y in zip(a, b) if x != y) or f"{len(a)} vs {len(b)}"
        raise cx.error(
            f"If's branches give results of different types ({shown}); Cuvil's if op needs "
            "equal types: give the model static input shapes, or a condition known at import"
        )
    return list(
        cx.builder.cond(
            _scalar_bool(cx, cond),
            regions[0],
            regions[1],
            [cx.scope[n] for n in runtime],
            name="if",
            provenance=cx.provenance(),
        )
    )


@onnx_op(TABLE, "Loop", 1, 11, 13, 16, 19, 21, 23, 24, 25)
def loop(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """``for i in range(M) while cond: (cond, v..., scans...) = body(i, cond, v...)``; ``M``
    and ``cond`` are optional (absent: no bound / always true)."""
    body = node.subgraphs["body"]
    trip, cond = node.input(0), node.input(1)
    carried = [v for v in node.inputs[2:] if v is not None]
    n_scan = len(body.output) - 1 - len(carried)
    m = cx.array(trip)
    c = cx.array(cond)
    if n_scan or m is not None:
        if n_scan and trip is not None:  # scan outputs grow: the loop must be unrolled
            m = cx.static(trip, "M")
        if n_scan and cond is not None:
            c = cx.static(cond, "cond")
        if (
            m is not None
            and int(m.reshape(-1)[0]) <= UNROLL_LIMIT
            and (cond is None or c is not None)
        ):
            unrolled = _unroll(cx, node, int(m.reshape(-1)[0]), c, carried, n_scan)
            if unrolled is not None:
                return unrolled
        if n_scan:
            raise cx.error(
                f"Loop with scan outputs needs a trip count of at most {UNROLL_LIMIT} and "
                "conditions known at import time (Cuvil unrolls it)"
            )
    return _while(cx, node, trip, cond, carried)


def _unroll(
    cx: OnnxContext,
    node: OnnxNode,
    m: int,
    c: np.ndarray | None,
    carried: list[Value],
    n_scan: int,
) -> list[Value] | None:
    """The loop unrolled, or None when a body's condition is only known at run time."""
    body = node.subgraphs["body"]
    names = [i.name for i in body.input]
    going = True if c is None else bool(np.asarray(c).reshape(-1)[0])
    values = list(carried)
    scans: list[list[Value]] = [[] for _ in range(n_scan)]
    for i in range(m):
        if not going:
            break
        env = dict(cx.scope)
        env[names[0]] = cx.scalar(i, DType.i64)
        env[names[1]] = cx.constant(np.asarray(going), "cond")
        for name, v in zip(names[2:], values):
            env[name] = v
        outs = run_graph(cx, body, env)
        k = cx.array(outs[0])
        if k is None:
            return None
        going = bool(np.asarray(k).reshape(-1)[0])
        values = outs[1 : 1 + len(carried)]
        for s, v in zip(scans, outs[1 + len(carried) :]):
            s.append(cx.op("unsqueeze", [v], axis=0))
    stacked = []
    for s in scans:
        if not s:
            raise cx.error("Loop ran no iteration: its scan outputs would be empty")
        stacked.append(s[0] if len(s) == 1 else cx.op("concat", s, axis=0))
    return values + stacked


def _while(
    cx: OnnxContext, node: OnnxNode, trip: Value | None, cond: Value | None, carried: list[Value]
) -> list[Value]:
    """A ``while`` carrying (iteration, condition, v...); the trip count is an invariant."""
    body = node.subgraphs["body"]
    names = [i.name for i in body.input]
    i64, flag = TensorType((), DType.i64), TensorType((), DType.bool)
    start = [cx.scalar(0, DType.i64), _scalar_bool(cx, cond) if cond else _true(cx)]
    limit = cx.op("reshape", [cx.cast(trip, DType.i64)], shape=()) if trip is not None else None
    runtime, constants = _captures(cx, [body])
    invariants = [cx.scope[n] for n in runtime] + ([limit] if limit is not None else [])
    params = [(names[0], i64), (names[1], flag)] + [
        (name, v.type) for name, v in zip(names[2:], carried)
    ]
    inv_names = runtime + (["__trip"] if limit is not None else [])
    state = [t for _, t in params]

    def cond_graph() -> Any:
        child = _child(cx, state + [v.type for v in invariants])
        ins = child.builder.inputs
        go = ins[1]
        if limit is not None:
            below = child.op("lt", [ins[0], ins[-1]])
            go = child.op("logical_and", [go, below])
        return child.builder.build([go])

    def finish(child: OnnxContext, env: dict[str, Value], outs: list[Value]) -> list[Value]:
        nxt = child.op("add", [env[names[0]], child.scalar(1, DType.i64)])
        return [nxt, _scalar_bool(child, outs[0]), *outs[1:]]

    scope = dict(cx.scope)
    if limit is not None:
        cx.scope = {**scope, "__trip": limit}
    try:
        body_region = _region(cx, body, params, inv_names, constants, finish)
    finally:
        cx.scope = scope
    outs = cx.builder.while_loop(
        cond_graph(),
        body_region,
        [*start, *carried],
        invariants,
        name="loop",
        provenance=cx.provenance(),
    )
    return list(outs[2:])


@onnx_op(TABLE, "Scan", 8, 9, 11, 16, 19, 21, 23, 24, 25)
def scan(cx: OnnxContext, node: OnnxNode) -> Sequence[Value]:
    """``(state..., out_t...) = body(state..., in_t...)`` for each slice ``t`` of the scan
    inputs along their axes (backwards where a direction is 1); the outputs stack the ``out_t``.
    Unrolled at import time: the scanned length must be static and at most ``UNROLL_LIMIT``.
    Scan-8 has a batch dim first (each batch element scanned along dim 1) and ``sequence_lens``
    (which must be the full length here)."""
    if node.version == 8:
        return _scan8(cx, node)
    return _scan(cx, node, [v for v in node.inputs if v is not None])


def _scan8(cx: OnnxContext, node: OnnxNode) -> list[Value]:
    lens = node.input(0)
    values = [v for v in node.inputs[1:] if v is not None]
    batch = values[0].type.shape[0]
    if not isinstance(batch, int):
        raise cx.error("Scan-8 needs a static batch size")
    if lens is not None:
        full = {v.type.shape[1] for v in values[len(values) - int(node.attr("num_scan_inputs")) :]}
        given = {int(n) for n in np.asarray(cx.static(lens, "sequence_lens")).reshape(-1)}
        if given != full:
            raise cx.error(f"Scan-8 sequence_lens {sorted(given)} shorter than the inputs")
    dirs = node.attr("directions")
    view = OnnxNode(
        node.op_type,
        node.name,
        node.inputs,
        {**node.attrs, "scan_input_directions": dirs if dirs is not None else []},
        node.num_outputs,
        9,
        node.opset,
        node.domain,
        node.subgraphs,
    )
    results = []
    for b in range(batch):
        part = [
            cx.op("squeeze", [cx.op("slice", [v], axis=0, start=b, end=b + 1)], axes=(0,))
            for v in values
        ]
        results.append(_scan(cx, view, part))
    return [
        cx.op("concat", [cx.op("unsqueeze", [r[k]], axis=0) for r in results], axis=0)
        for k in range(len(results[0]))
    ]


def _scan(cx: OnnxContext, node: OnnxNode, values: list[Value]) -> list[Value]:
    body = node.subgraphs["body"]
    n_in = int(node.attr("num_scan_inputs"))
    states, scanned = values[: len(values) - n_in], values[len(values) - n_in :]
    n_out = len(body.output) - len(states)

    def per(name: str, count: int, ranks: Sequence[int]) -> list[int]:
        got = [int(v) for v in node.attr(name, [0] * count)]
        return [a + r if a < 0 else a for a, r in zip(got, ranks)] if ranks else got

    in_axes = per("scan_input_axes", n_in, [v.type.rank for v in scanned])
    in_dirs = per("scan_input_directions", n_in, []) or [0] * n_in
    out_dirs = per("scan_output_directions", n_out, [])
    lengths = {v.type.shape[a] for v, a in zip(scanned, in_axes)}
    if len(lengths) != 1 or not isinstance(next(iter(lengths)), int):
        raise cx.error(f"Scan's inputs must share one static scanned length (got {lengths})")
    steps = int(next(iter(lengths)))
    if steps > UNROLL_LIMIT:
        raise cx.error(f"Scan over {steps} steps: Cuvil unrolls at most {UNROLL_LIMIT}")
    names = [i.name for i in body.input]
    outs: list[list[Value]] = [[] for _ in range(n_out)]
    for t in range(steps):
        env = dict(cx.scope)
        for name, v in zip(names, states):
            env[name] = v
        for name, v, axis, d in zip(names[len(states) :], scanned, in_axes, in_dirs):
            at = steps - 1 - t if d else t
            piece = cx.op("slice", [v], axis=axis, start=at, end=at + 1)
            env[name] = cx.op("squeeze", [piece], axes=(axis,))
        result = run_graph(cx, body, env)
        states = result[: len(states)]
        for k, v in enumerate(result[len(states) :]):
            outs[k].append(v)
    if n_out and not steps:
        raise cx.error("Scan over 0 steps: its scan outputs would be empty")
    out_axes = per("scan_output_axes", n_out, [outs[k][0].type.rank + 1 for k in range(n_out)])
    stacked = []
    for k, pieces in enumerate(outs):
        if out_dirs[k]:
            pieces = pieces[::-1]
        parts = [cx.op("unsqueeze", [p], axis=out_axes[k]) for p in pieces]
        stacked.append(parts[0] if len(parts) == 1 else cx.op("concat", parts, axis=out_axes[k]))
    return [*states, *stacked]


def _true(cx: OnnxContext) -> Value:
    return cx.constant(np.asarray(True), "true")


__all__ = ["TABLE", "UNROLL_LIMIT", "run_graph"]
