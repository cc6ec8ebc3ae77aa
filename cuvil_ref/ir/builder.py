"""GraphBuilder: the one convenient way to make a graph (frontends, passes, tests).

``b.op("relu", [x])`` looks the op up in the registry, normalizes its attributes, infers its output
types and appends the node, so every graph built this way is well typed by construction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
        self._names: set[str] = set()
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
    ) -> tuple[Value, ...]:
        """Append a node (any number of outputs). ``output_types`` overrides inference only to
        attach layout/quant tags; the shapes and dtypes must equal the inferred ones."""
        from cuvil_ref.ops import get_op

        opdef = get_op(op)
        norm = opdef.normalize_attrs(attrs)
        types = opdef.infer_types([v.type for v in inputs], norm)
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
        self._nodes.append(Node(op, tuple(inputs), outs, norm, provenance))
        return outs

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
