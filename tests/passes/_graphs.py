"""Shared helpers for pass tests: random inputs, interpreter equivalence, IR text."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ir.printer import print_graph
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ir.verifier import verify


def f32(*shape: int) -> TensorType:
    return TensorType(shape)


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)


def random_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for v in graph.inputs:
        shape = tuple(d if isinstance(d, int) else 2 for d in v.type.shape)
        out.append(rng.standard_normal(shape).astype(v.type.dtype.numpy))
    return out


def assert_equivalent(
    before: Graph, after: Graph, inputs: Sequence[np.ndarray] | None = None, rtol: float = 1e-5
) -> None:
    """Both graphs verify and give the same outputs within f32 rounding scaled to magnitude."""
    verify(before)
    verify(after)
    args = list(inputs) if inputs is not None else random_inputs(before)
    want = interpret(before, args)
    got = interpret(after, args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(scale, 1.0))


def ir(graph: Graph) -> str:
    return print_graph(graph)


def ops(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]
