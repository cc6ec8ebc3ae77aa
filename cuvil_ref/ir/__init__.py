"""The Cuvil IR: dtypes, tensor types, values, nodes, graphs, modules, builder, verifier."""

from __future__ import annotations

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType, promote
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Graph, Module, Node, Provenance, Value
from cuvil_ref.ir.types import Dim, QuantParams, Shape, TensorType
from cuvil_ref.ir.verifier import verify

__all__ = [
    "DType",
    "Dim",
    "FrozenDict",
    "Graph",
    "GraphBuilder",
    "Module",
    "Node",
    "Provenance",
    "QuantParams",
    "Shape",
    "TensorType",
    "Value",
    "promote",
    "verify",
]
