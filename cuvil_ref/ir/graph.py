"""The IR proper: ``Value``, ``Node``, ``Graph``, ``Module``. All immutable.

Grammar (the textual form in ``cuvil_ref.ir.printer`` follows it)::

    Module   ::= name, metadata, Graph
    Graph    ::= inputs: Value*, constants: {name: ndarray}, nodes: Node*, outputs: Value*
    Node     ::= op, inputs: Value*, attrs: {name: attr}, outputs: Value*, provenance,
                 regions: Graph*
    Value    ::= name, TensorType

Values are in SSA form: each name is defined once, by a graph input, a constant or one node
output, and nodes are in topological order. Passes never mutate a graph; they build a new one
(``Graph.replace`` or :class:`cuvil_ref.ir.builder.GraphBuilder`).

A control-flow node (``if``, ``while``: ``cuvil_ref.ops.control_flow``) holds **regions**. A region
is a Graph of its own and a scope of its own: its nodes read only its inputs, its constants and
its own earlier results; values of the enclosing graph reach it only as the node's operands
(bound to the region's inputs). So whatever works on a graph works on a region.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from cuvil_ref.errors import IRError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType


@dataclass(frozen=True)
class Value:
    """A named SSA value with its static type."""

    name: str
    type: TensorType

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Provenance:
    """Where a node came from: the torch node, the module path, and the user's source line."""

    torch_node: str | None = None
    module_path: str | None = None
    source: str | None = None  # "file.py:LINE" (+ optional " in func")

    def describe(self) -> str:
        parts = []
        if self.module_path:
            parts.append(f"module '{self.module_path}'")
        if self.torch_node:
            parts.append(f"torch node '{self.torch_node}'")
        if self.source:
            parts.append(f"at {self.source}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Node:
    """One op application. ``attrs`` is a FrozenDict of ints, floats, bools, strs and tuples;
    ``regions`` are the graphs a control-flow op runs (empty for every other op)."""

    op: str
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    attrs: FrozenDict = field(default_factory=FrozenDict)
    provenance: Provenance | None = None
    regions: tuple[Graph, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "regions", tuple(self.regions))
        if not isinstance(self.attrs, FrozenDict):
            object.__setattr__(self, "attrs", FrozenDict(self.attrs))

    @property
    def output(self) -> Value:
        """The single output; raises if the node has several."""
        if len(self.outputs) != 1:
            raise IRError(f"node {self.describe()} has {len(self.outputs)} outputs, not 1")
        return self.outputs[0]

    def describe(self) -> str:
        """``%y = conv2d(...)`` plus its provenance, for error messages."""
        outs = ", ".join(str(v) for v in self.outputs)
        ins = ", ".join(str(v) for v in self.inputs)
        text = f"'{outs} = {self.op}({ins})'"
        if self.provenance is not None and self.provenance.describe():
            text += f" ({self.provenance.describe()})"
        return text

    def with_attrs(self, **changes: Any) -> Node:
        return replace(self, attrs=self.attrs.replace(**changes))

    def with_inputs(self, inputs: Sequence[Value]) -> Node:
        """This node reading ``inputs`` instead (attrs, outputs, provenance, regions kept)."""
        return replace(self, inputs=tuple(inputs))

    def with_regions(self, regions: Sequence[Graph]) -> Node:
        return replace(self, regions=tuple(regions))


def _freeze_array(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array = array.copy()
        array.flags.writeable = False
    return array


@dataclass(frozen=True)
class Graph:
    """A function: typed inputs, named constants (weights), nodes in topological order, outputs."""

    inputs: tuple[Value, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Value, ...]
    # name -> read-only ndarray; any mapping is accepted and frozen in __post_init__
    constants: Mapping[str, np.ndarray] = field(default_factory=FrozenDict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        consts = {k: _freeze_array(np.asarray(v)) for k, v in dict(self.constants).items()}
        object.__setattr__(self, "constants", _ConstantTable(consts))

    def constant_value(self, name: str) -> Value:
        """The Value that refers to constant ``name``."""
        return Value(name, constant_type(self.constants[name]))

    @property
    def constant_values(self) -> tuple[Value, ...]:
        return tuple(self.constant_value(n) for n in self.constants)

    def producers(self) -> dict[str, Node]:
        """Map value name -> the node defining it."""
        return {v.name: n for n in self.nodes for v in n.outputs}

    def users(self) -> dict[str, list[Node]]:
        """Map value name -> nodes that read it (in order)."""
        result: dict[str, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs:
                result.setdefault(v.name, []).append(n)
        return result

    def replace(
        self,
        *,
        inputs: Sequence[Value] | None = None,
        nodes: Iterable[Node] | None = None,
        outputs: Sequence[Value] | None = None,
        constants: Mapping[str, np.ndarray] | None = None,
    ) -> Graph:
        """A new graph with some parts swapped (the others shared)."""
        return Graph(
            tuple(self.inputs if inputs is None else inputs),
            tuple(self.nodes if nodes is None else nodes),
            tuple(self.outputs if outputs is None else outputs),
            self.constants if constants is None else constants,
        )

    def op_histogram(self) -> dict[str, int]:
        """Op name -> count, regions included (a node inside a region counts once, however often
        the region runs)."""
        hist: dict[str, int] = {}
        for n in self.walk():
            hist[n.op] = hist.get(n.op, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))

    def walk(self) -> Iterator[Node]:
        """Every node, each region's nodes right after the node holding the region."""
        for n in self.nodes:
            yield n
            for region in n.regions:
                yield from region.walk()

    @property
    def has_regions(self) -> bool:
        return any(n.regions for n in self.nodes)


class _ConstantTable(FrozenDict):
    """FrozenDict of arrays: equality and hashing by name, shape, dtype and bytes."""

    def __init__(self, data: Mapping[str, np.ndarray]) -> None:
        super().__init__()
        self._data = dict(data)
        self._hash = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((k, v.shape, str(v.dtype)) for k, v in self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping) or list(self) != list(other):
            return False
        return all(
            a.dtype == np.asarray(other[k]).dtype
            and a.shape == np.asarray(other[k]).shape
            and a.tobytes() == np.asarray(other[k]).tobytes()
            for k, a in self._data.items()
        )


def constant_type(array: np.ndarray) -> TensorType:
    return TensorType(tuple(int(d) for d in array.shape), DType.from_numpy(array.dtype))


@dataclass(frozen=True)
class Module:
    """A graph plus its name and metadata (producer, capture mode, target...)."""

    graph: Graph
    name: str = "main"
    metadata: Mapping[str, Any] = field(default_factory=FrozenDict)  # frozen in __post_init__

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, FrozenDict):
            object.__setattr__(self, "metadata", FrozenDict(self.metadata))

    @property
    def inputs(self) -> tuple[Value, ...]:
        return self.graph.inputs

    @property
    def outputs(self) -> tuple[Value, ...]:
        return self.graph.outputs

    def with_graph(self, graph: Graph) -> Module:
        return replace(self, graph=graph)

    def __str__(self) -> str:
        from cuvil_ref.ir.printer import print_module

        return print_module(self)

    def summary(self) -> str:
        """A short human summary: inputs, outputs, node count, op histogram, weight bytes."""
        g = self.graph
        weight_bytes = sum(a.nbytes for a in g.constants.values())
        hist = ", ".join(f"{op} x{n}" for op, n in g.op_histogram().items())
        ins = ", ".join(f"{v}: {v.type}" for v in g.inputs)
        outs = ", ".join(f"{v.type}" for v in g.outputs)
        return (
            f"module @{self.name}: ({ins}) -> ({outs})\n"
            f"  {len(g.nodes)} nodes, {len(g.constants)} constants "
            f"({weight_bytes / 1e6:.2f} MB)\n  ops: {hist}"
        )

    def save(self, path: str, **kwargs: Any) -> None:
        """Write this module as a ``.cuvilir`` artifact (see ``cuvil_ref.artifacts``)."""
        from cuvil_ref.artifacts import save_module

        save_module(self, path, **kwargs)
