"""GraphBuilder: the one convenient way to make a graph (frontends, passes, tests).

``b.op("relu", [x])`` looks the op up in the registry, normalizes its attributes, infers its output
types and appends the node, so every graph built this way is well typed by construction.

Regions (the graphs an ``if`` or ``while`` runs) are built with a child builder::

    then = b.region([x.type])                    # a builder whose inputs have these types
    then_out = then.op("relu", [then.inputs[0]])
    other = b.build_region(lambda r, v: [r.op("neg", [v])], [x.type])
    (y,) = b.cond(pred, then.build([then_out]), other, [x])

A child builder has its own inputs, constants and nodes (a region is closed: it reads the
enclosing graph's values only through the op's operands) but draws names from its parent's pool,
so the printed module never shows one name for two values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import IRError
from cuvil_ref.ir.graph import Graph, Node, Provenance, Value, constant_type
from cuvil_ref.ir.types import TensorType

_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def sanitize_name(hint: str) -> str:
    """A valid value name from any hint (``layer1.0/conv`` -> ``layer1.0_conv``)."""
    name = re.sub(r"[^A-Za-z0-9_.]", "_", hint) or "v"
    if not (name[0].isalpha() or name[0] == "_"):
        name = "v" + name
    return name


class GraphBuilder:
    """Accumulates inputs, constants and nodes, then ``build(outputs)`` returns a Graph."""

    def __init__(self) -> None:
        self._inputs: list[Value] = []
        self._nodes: list[Node] = []
        self._constants: dict[str, np.ndarray] = {}
        self._names: set[str] = set()  # shared with child (region) builders
        self._counter = 0

    def fresh(self, hint: str = "v") -> str:
        """A value name not used yet, based on ``hint``."""
        base = sanitize_name(hint)
        name = base
        while name in self._names:
            self._counter += 1
            name = f"{base}_{self._counter}"
        self._names.add(name)
        return name

    def reserve(self, name: str) -> None:
        """Mark ``name`` as used (when copying values from another graph)."""
        if not _NAME_OK.match(name):
            raise IRError(f"invalid value name {name!r}")
        if name in self._names:
            raise IRError(f"value name %{name} is defined twice")
        self._names.add(name)

    @property
    def inputs(self) -> tuple[Value, ...]:
        """The inputs added so far (a region builder's inputs are its parameters)."""
        return tuple(self._inputs)

    def input(self, name: str, type: TensorType) -> Value:
        v = Value(self.fresh(name), type)
        self._inputs.append(v)
        return v

    def add_input(self, value: Value) -> Value:
        self.reserve(value.name)
        self._inputs.append(value)
        return value

    def constant(self, name: str, array: np.ndarray | Any) -> Value:
        arr = np.asarray(array)
        n = self.fresh(name)
        self._constants[n] = arr
        return Value(n, constant_type(arr))

    def constant_array(self, name: str) -> np.ndarray | None:
        """The array of constant ``name`` added so far, or ``None`` if it is not a constant."""
        return self._constants.get(name)

    def add_constant(self, name: str, array: np.ndarray) -> Value:
        self.reserve(name)
        self._constants[name] = np.asarray(array)
        return Value(name, constant_type(self._constants[name]))

    def op(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        provenance: Provenance | None = None,
    ) -> Value:
        """Append a single-output node and return its output value."""
        outs = self.op_multi(op, inputs, attrs, name=name, provenance=provenance)
        if len(outs) != 1:
            raise IRError(f"op '{op}' has {len(outs)} outputs; use op_multi")
        return outs[0]

    def op_multi(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        provenance: Provenance | None = None,
        output_types: Sequence[TensorType] | None = None,
        regions: Sequence[Graph] = (),
    ) -> tuple[Value, ...]:
        """Append a node (any number of outputs). ``output_types`` overrides inference only to
        attach layout/quant tags; the shapes and dtypes must equal the inferred ones.
        ``regions``: the graphs of a control-flow op (see :meth:`cond`, :meth:`while_loop`)."""
        from cuvil_ref.ops import get_op

        opdef = get_op(op)
        norm = opdef.normalize_attrs(attrs)
        types = opdef.infer_types([v.type for v in inputs], norm, regions)
        if output_types is not None:
            for t, u in zip(types, output_types, strict=True):
                if (t.shape, t.dtype) != (u.shape, u.dtype):
                    raise IRError(f"op '{op}': declared output type {u} differs from inferred {t}")
            types = tuple(output_types)
        hint = name or op
        outs = tuple(
            Value(self.fresh(hint if len(types) == 1 else f"{hint}_{i}"), t)
            for i, t in enumerate(types)
        )
        self._nodes.append(Node(op, tuple(inputs), outs, norm, provenance, tuple(regions)))
        return outs

    # --- regions ---------------------------------------------------------------------------------

    def region(
        self, types: Sequence[TensorType], names: Sequence[str] | None = None
    ) -> GraphBuilder:
        """A builder for a region whose inputs have ``types`` (named after ``names``, default
        ``arg``); ``build(outputs)`` on it gives the region's Graph."""
        if names is not None and len(names) != len(types):
            raise IRError(f"region: {len(names)} names for {len(types)} input types")
        child = GraphBuilder()
        child._names = self._names
        for i, t in enumerate(types):
            child.input(names[i] if names is not None else "arg", t)
        return child

    def build_region(
        self,
        fn: Callable[..., Sequence[Value] | Value],
        types: Sequence[TensorType],
        names: Sequence[str] | None = None,
    ) -> Graph:
        """The region ``fn(builder, *inputs)`` builds: it returns the region's output values."""
        child = self.region(types, names)
        outs = fn(child, *child.inputs)
        return child.build([outs] if isinstance(outs, Value) else list(outs))

    def cond(
        self,
        pred: Value,
        then: Graph,
        otherwise: Graph,
        operands: Sequence[Value] = (),
        *,
        name: str | None = None,
        provenance: Provenance | None = None,
    ) -> tuple[Value, ...]:
        """``if(pred, *operands)``: ``then(*operands)`` when the bool scalar ``pred`` is true,
        else ``otherwise(*operands)``; both regions take the operands' types and return the
        same types."""
        return self.op_multi(
            "if", [pred, *operands], name=name, provenance=provenance, regions=(then, otherwise)
        )

    def while_loop(
        self,
        cond: Graph,
        body: Graph,
        carried: Sequence[Value],
        invariants: Sequence[Value] = (),
        *,
        name: str | None = None,
        provenance: Provenance | None = None,
    ) -> tuple[Value, ...]:
        """``while``: ``carried = body(*carried, *invariants)`` as long as
        ``cond(*carried, *invariants)`` is true; returns the final carried values."""
        return self.op_multi(
            "while",
            [*carried, *invariants],
            {"num_carried": len(carried)},
            name=name,
            provenance=provenance,
            regions=(cond, body),
        )

    def add_node(self, node: Node) -> Node:
        """Append an already-typed node (its output names must be fresh)."""
        for v in node.outputs:
            self.reserve(v.name)
        self._nodes.append(node)
        return node

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def build(self, outputs: Sequence[Value]) -> Graph:
        return Graph(tuple(self._inputs), tuple(self._nodes), tuple(outputs), self._constants)
