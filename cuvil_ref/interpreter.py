"""The reference interpreter: the oracle every kernel pack is checked against.

It walks the nodes in order, calls each op's numpy ``reference`` from the registry, and frees a
value after its last use. Symbolic dims are bound from the input arrays' shapes, and attributes
that mention a symbol (e.g. a reshape to ``("batch", 512)``) receive its value. A control-flow op
(``if``, ``while``) runs its regions through the same walk (:func:`run_graph`), each region with
its own values and the enclosing graph's symbol bindings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError, InputError, InterpretError
from cuvil_ref.ir.graph import Graph, Module, Node
from cuvil_ref.ir.types import TensorType, format_shape
from cuvil_ref.ops import get_op


def interpret(program: Module | Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run ``program`` on numpy ``inputs`` (one per graph input); return the outputs as arrays."""
    graph = program.graph if isinstance(program, Module) else program
    if len(inputs) != len(graph.inputs):
        raise InputError(
            f"the graph takes {len(graph.inputs)} inputs "
            f"({', '.join(f'{v}: {v.type}' for v in graph.inputs)}), got {len(inputs)}"
        )
    return run_graph(graph, inputs, {})


def run_graph(graph: Graph, inputs: Sequence[Any], bindings: dict[str, int]) -> list[np.ndarray]:
    """Interpret ``graph`` with ``bindings`` (symbol -> size), which its inputs extend."""
    env: dict[str, Any] = dict(graph.constants)
    for value, array in zip(graph.inputs, inputs, strict=True):
        env[value.name] = check_input(value.name, value.type, array, bindings)
    last_use = _last_uses(graph)
    for index, node in enumerate(graph.nodes):
        args = [env[v.name] for v in node.inputs]
        results = run_node(node, args, bindings)
        for v, r in zip(node.outputs, results, strict=True):
            env[v.name] = r
        for name in last_use.get(index, ()):
            env.pop(name, None)
    return [np.asarray(env[v.name]) for v in graph.outputs]


RegionRunner = Callable[[Graph, Sequence[np.ndarray]], Sequence[np.ndarray]]


def run_node(
    node: Node,
    args: Sequence[Any],
    bindings: Mapping[str, int],
    run_region: RegionRunner | None = None,
) -> tuple[Any, ...]:
    """Evaluate one node; any failure is re-raised as 'while executing <node>'.

    A control-flow node runs its regions with ``run_region(region, arrays)`` (default: this
    interpreter, sharing ``bindings``)."""
    opdef = get_op(node.op)
    attrs = bind_attrs(node.attrs, bindings) if bindings else node.attrs
    if node.regions and run_region is None:
        shared = bindings if isinstance(bindings, dict) else dict(bindings)

        def run_region(region: Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
            return run_graph(region, arrays, shared)

    try:
        results = opdef.evaluate(args, attrs, node.regions, run_region)
    except CuvilError as exc:
        raise type(exc)(f"while executing {node.describe()}: {exc}") from exc
    except Exception as exc:
        raise InterpretError(
            f"while executing {node.describe()}: {type(exc).__name__}: {exc}"
        ) from exc
    if len(results) != len(node.outputs):
        raise InterpretError(
            f"while executing {node.describe()}: reference returned {len(results)} outputs, "
            f"the node declares {len(node.outputs)}"
        )
    for v, r in zip(node.outputs, results, strict=True):
        shape = np.shape(r)
        declared = v.type.shape
        if len(shape) != len(declared) or any(
            (d if isinstance(d, int) else bindings.get(d, s)) != s for d, s in zip(declared, shape)
        ):
            raise InterpretError(
                f"while executing {node.describe()}: reference returned shape {list(shape)}, "
                f"the IR says [{', '.join(str(d) for d in declared)}]"
                + (f" with {dict(bindings)}" if bindings else "")
            )
        if np.asarray(r).dtype != v.type.dtype.numpy:
            raise InterpretError(
                f"while executing {node.describe()}: reference returned dtype "
                f"{np.asarray(r).dtype}, the IR says {v.type.dtype.value} (a bug in op "
                f"'{node.op}')"
            )
    return results


def check_input(name: str, type_: TensorType, array: Any, bindings: dict[str, int]) -> np.ndarray:
    """Validate one input against its type and bind its symbolic dims; returns an ndarray."""
    arr = np.asarray(array)
    want = type_.dtype.numpy
    if arr.dtype != want:
        raise InputError(
            f"input %{name}: expected dtype {type_.dtype.value} ({want}), got {arr.dtype}"
        )
    if arr.ndim != len(type_.shape):
        raise InputError(
            f"input %{name}: expected shape [{format_shape(type_.shape)}], got {list(arr.shape)}"
        )
    for dim, actual in zip(type_.shape, arr.shape, strict=True):
        if isinstance(dim, str):
            bound = bindings.setdefault(dim, int(actual))
            if bound != actual:
                raise InputError(
                    f"input %{name}: dim '{dim}' is {actual} here but {bound} in another input"
                )
        elif dim != actual:
            raise InputError(
                f"input %{name}: expected shape [{format_shape(type_.shape)}], "
                f"got {list(arr.shape)}"
            )
    return arr


def bind_attrs(attrs: Mapping[str, Any], bindings: Mapping[str, int]) -> dict[str, Any]:
    """Replace symbol names inside tuple attributes by their bound values."""
    out = dict(attrs)
    for key, value in attrs.items():
        if isinstance(value, tuple) and any(isinstance(x, str) for x in value):
            out[key] = tuple(bindings.get(x, x) if isinstance(x, str) else x for x in value)
    return out


def _last_uses(graph: Graph) -> dict[int, list[str]]:
    """Node index -> names of node outputs read for the last time there (never graph outputs)."""
    keep = {v.name for v in graph.outputs}
    last: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for v in node.inputs:
            last[v.name] = i
    produced = {v.name for n in graph.nodes for v in n.outputs}
    result: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in produced and name not in keep:
            result.setdefault(i, []).append(name)
    return result
