"""The conversion context of the ONNX importer: the graph being built, the ONNX node being
converted, and import-time constant folding.

A converter receives an :class:`OnnxContext` and an :class:`OnnxNode` (the node's inputs already
IR :class:`Value` objects, ``None`` for an omitted optional input, its attributes as Python
values) and returns the node's outputs. ``cx.op(...)`` appends an IR op; when every input is a
constant it is evaluated right away with the op's reference semantics and becomes a constant, so
shape arithmetic (``Shape -> Gather -> Concat -> Reshape``) folds to the static values that
``Reshape``, ``Slice`` or ``Expand`` need. ``cx.static(v, "shape")`` reads such a value or raises
an error naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import UnsupportedOpError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Provenance, Value
from cuvil_ref.ops import get_op

#: Folding stops above this many elements: a constant that big stays an op in the graph.
FOLD_LIMIT = 1 << 22


@dataclass(frozen=True)
class OnnxNode:
    """One ONNX node as converters see it."""

    op_type: str
    name: str
    inputs: tuple[Value | None, ...]
    attrs: Mapping[str, Any]
    num_outputs: int
    version: int  # the resolved operator version (its schema's since_version)
    opset: int  # the model's opset for the node's domain
    domain: str = ""
    subgraphs: Mapping[str, Any] = field(default_factory=dict)
    used: tuple[bool, ...] = ()  # which outputs the graph names (an optional one may be "")
    proto: Any = None  # the onnx.NodeProto (function bodies are built from it)

    def describe(self) -> str:
        shown = f"'{self.name}'" if self.name else "(unnamed)"
        return f"ONNX {self.op_type} node {shown} (opset {self.opset})"

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def output_used(self, i: int) -> bool:
        return i < len(self.used) and self.used[i]

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)


class StaticInputError(UnsupportedOpError):
    """An input that Cuvil needs at import time (a shape, axes, pads...) is, or is computed
    from, graph inputs.

    ``tensors`` names those graph inputs (``tensor`` the first);
    ``onnx_to_cuvilir(..., constant_inputs={name: value, ...})`` imports the model specialized
    to their values.
    """

    def __init__(self, message: str, tensors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.tensors = tensors
        self.tensor = tensors[0] if tensors else None


class OnnxContext:
    """Builds the IR graph for one ONNX graph; converters call ``op``, ``constant``, ``static``."""

    def __init__(self, builder: GraphBuilder | None = None) -> None:
        self.builder = builder or GraphBuilder()
        self.node: OnnxNode | None = None
        self.folded = 0
        self.graph_inputs: dict[str, str] = {}  # IR value name -> ONNX graph input name
        # IR value name -> the ONNX graph inputs it is computed from (for StaticInputError)
        self.depends: dict[str, frozenset[str]] = {}
        # the ONNX names in scope (If/Loop subgraphs read them) and the model's opsets
        self.scope: dict[str, Value] = {}
        self.opsets: Mapping[str, int] = {}

    # -- errors -------------------------------------------------------------------------------
    def error(self, message: str) -> UnsupportedOpError:
        """An UnsupportedOpError naming the current node (its op type, name and opset)."""
        where = self.node.describe() if self.node is not None else "the ONNX graph"
        return UnsupportedOpError(f"{where}: {message}")

    # -- values -------------------------------------------------------------------------------
    def constant(self, array: Any, hint: str = "const") -> Value:
        return self.builder.constant(hint, np.asarray(array))

    def array(self, value: Value | None) -> np.ndarray | None:
        """The value's array if it is a constant (an initializer or something folded)."""
        if value is None:
            return None
        return self.builder.constant_array(value.name)

    def static(self, value: Value | None, what: str) -> np.ndarray:
        """The value's array; a value only known at run time is refused, naming ``what``."""
        arr = self.array(value)
        if arr is None:
            where = self.node.describe() if self.node is not None else "the ONNX graph"
            tensors = tuple(sorted(self.depends.get(value.name, ()))) if value else ()
            direct = value is not None and value.name in self.graph_inputs
            shown = ", ".join(f"'{t}': ..." for t in tensors)
            hint = ""
            if tensors:
                what_it_is = (
                    f"it is the graph input '{tensors[0]}'"
                    if direct
                    else "it is computed from the graph input(s) "
                    + ", ".join(f"'{t}'" for t in tensors)
                )
                hint = (
                    f"; {what_it_is}: pass constant_inputs={{{shown}}} to import the model "
                    "specialized to those values"
                )
            raise StaticInputError(
                f"{where}: input '{what}' must be known when the model is imported (an "
                "initializer, a Constant, or computed from static shapes); Cuvil does not take "
                f"it at run time{hint}",
                tensors,
            )
        return arr

    def ints(self, value: Value | None, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.static(value, what)).reshape(-1)]

    def provenance(self) -> Provenance | None:
        if self.node is None:
            return None
        return Provenance(source=f"ONNX {self.node.op_type} '{self.node.name or '?'}'")

    # -- ops ----------------------------------------------------------------------------------
    def op(self, op: str, inputs: Sequence[Value], **attrs: Any) -> Value:
        outs = self.op_multi(op, inputs, **attrs)
        if len(outs) != 1:
            raise self.error(f"internal: IR op '{op}' gave {len(outs)} outputs")
        return outs[0]

    def op_multi(self, op: str, inputs: Sequence[Value], **attrs: Any) -> tuple[Value, ...]:
        """Append IR ``op``; fold it when every input is a constant (and the result is small)."""
        arrays = [self.array(v) for v in inputs]
        if all(a is not None for a in arrays):
            opdef = get_op(op)
            norm = opdef.normalize_attrs(attrs)
            types = opdef.infer_types([v.type for v in inputs], norm)
            if all(t.is_static and t.numel() <= FOLD_LIMIT for t in types):
                results = opdef.evaluate(arrays, norm)  # type: ignore[arg-type]
                self.folded += 1
                return tuple(
                    self.constant(np.asarray(r, dtype=t.dtype.numpy), op)
                    for r, t in zip(results, types, strict=True)
                )
        outs = self.builder.op_multi(op, inputs, attrs, name=op, provenance=self.provenance())
        deps = frozenset().union(*(self.depends.get(v.name, frozenset()) for v in inputs))
        if deps:
            for v in outs:
                self.depends[v.name] = deps
        return outs

    def cast(self, value: Value, dtype: DType) -> Value:
        if value.type.dtype == dtype:
            return value
        return self.op("cast", [value], dtype=dtype.value)

    def scalar(self, x: Any, dtype: DType) -> Value:
        return self.constant(np.asarray(x, dtype=dtype.numpy), "scalar")


__all__ = ["FOLD_LIMIT", "OnnxContext", "OnnxNode", "StaticInputError"]
