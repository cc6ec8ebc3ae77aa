"""Small graphs with control flow, shared by the tests of every layer that understands regions.

* :func:`branch_graph` -- ``if (sum(x) > 0) relu(x @ w) else x * 2``;
* :func:`loop_graph` -- iterative refinement with an early exit:
  ``while i < 8 and max|y - 0.5 (y + x / y)| > tol: y = 0.5 (y + x / y)`` (Heron's square root);
* :func:`nested_graph` -- a ``while`` whose body holds an ``if``.

Each takes ``symbolic`` (a leading dim ``n`` instead of 2) and builds through the public
:class:`~cuvil_ref.ir.GraphBuilder` region API.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, TensorType, Value

F32 = DType.f32


def _rows(symbolic: bool) -> int | str:
    return "n" if symbolic else 2


def weight() -> np.ndarray:
    return (np.arange(9, dtype=np.float32).reshape(3, 3) - 4.0) / 4.0


def branch_graph(symbolic: bool = False) -> Graph:
    b = GraphBuilder()
    x = b.input("x", TensorType((_rows(symbolic), 3)))
    pred = b.op("gt", [b.op("sum", [x]), b.constant("zero", np.float32(0.0))], name="positive")

    def then(r: GraphBuilder, v: Value) -> list[Value]:
        return [r.op("relu", [r.op("matmul", [v, r.constant("w", weight())])])]

    def otherwise(r: GraphBuilder, v: Value) -> list[Value]:
        return [r.op("mul", [v, r.constant("two", np.float32(2.0))])]

    (y,) = b.cond(
        pred,
        b.build_region(then, [x.type], ["xt"]),
        b.build_region(otherwise, [x.type], ["xe"]),
        [x],
        name="branch",
    )
    return b.build([y])


def loop_graph(symbolic: bool = False, tol: float = 1e-6, max_steps: int = 8) -> Graph:
    """sqrt(x) for positive x by Heron's method, stopping early once a step changes < tol."""
    b = GraphBuilder()
    x = b.input("x", TensorType((_rows(symbolic), 3)))
    i0 = b.constant("i0", np.int64(0))
    delta0 = b.constant("delta0", np.float32(np.inf))
    types = [i0.type, x.type, delta0.type, x.type]  # carried i, y, delta; invariant x

    def cond(r: GraphBuilder, i: Value, y: Value, delta: Value, xx: Value) -> list[Value]:
        more = r.op("lt", [i, r.constant("max_steps", np.int64(max_steps))])
        moving = r.op("gt", [delta, r.constant("tol", np.float32(tol))])
        return [r.op("logical_and", [more, moving])]

    def body(r: GraphBuilder, i: Value, y: Value, delta: Value, xx: Value) -> list[Value]:
        half = r.constant("half", np.float32(0.5))
        nxt = r.op("mul", [half, r.op("add", [y, r.op("div", [xx, y])])], name="y_next")
        change = r.op("amax", [r.op("abs", [r.op("sub", [nxt, y])])], name="change")
        return [r.op("add", [i, r.constant("one", np.int64(1))], name="i_next"), nxt, change]

    i, y, _ = b.while_loop(
        b.build_region(cond, types, ["ci", "cy", "cd", "cx"]),
        b.build_region(body, types, ["bi", "by", "bd", "bx"]),
        [i0, x, delta0],
        [x],
        name="heron",
    )
    return b.build([y, i])


def nested_graph(symbolic: bool = False) -> Graph:
    """Three steps of ``y = y - 1 if max(y) > 2 else y * 0.5``."""
    b = GraphBuilder()
    x = b.input("x", TensorType((_rows(symbolic), 3)))
    i0 = b.constant("i0", np.int64(0))
    types = [i0.type, x.type]

    def cond(r: GraphBuilder, i: Value, y: Value) -> list[Value]:
        return [r.op("lt", [i, r.constant("steps", np.int64(3))])]

    def body(r: GraphBuilder, i: Value, y: Value) -> list[Value]:
        big = r.op("gt", [r.op("amax", [y]), r.constant("two", np.float32(2.0))])
        sub = r.build_region(lambda s, v: [s.op("sub", [v, s.constant("one_f", np.float32(1))])],
                             [y.type])  # fmt: skip
        half = r.build_region(lambda s, v: [s.op("mul", [v, s.constant("h", np.float32(0.5))])],
                              [y.type])  # fmt: skip
        (z,) = r.cond(big, sub, half, [y], name="step")
        return [r.op("add", [i, r.constant("one", np.int64(1))]), z]

    _, y = b.while_loop(b.build_region(cond, types), b.build_region(body, types), [i0, x])
    return b.build([y])


def module(graph: Graph, name: str = "cf") -> Module:
    return Module(graph, name, {"producer": "tests"})


def branch_reference(x: np.ndarray) -> np.ndarray:
    if x.sum() > 0:
        return np.maximum(x @ weight(), 0)
    return x * 2


def loop_reference(x: np.ndarray, tol: float = 1e-6, max_steps: int = 8) -> tuple[np.ndarray, int]:
    y, i, delta = x.copy(), 0, np.inf
    while i < max_steps and delta > tol:
        nxt = np.float32(0.5) * (y + x / y)
        delta, y, i = float(np.abs(nxt - y).max()), nxt, i + 1
    return y, i


def nested_reference(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    for _ in range(3):
        y = y - np.float32(1) if y.max() > 2 else y * np.float32(0.5)
    return y
