"""Building one-op graphs and running them on the cpu pack and on the interpreter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ir.types import TensorType
from cuvil_ref.passes import plan_memory


def one_op(op: str, inputs: Sequence[np.ndarray], consts: Sequence[np.ndarray | None],
           **attrs: Any) -> tuple[Graph, list[np.ndarray]]:  # fmt: skip
    """A graph of one ``op``: ``inputs`` become graph inputs, then ``consts`` constants
    (None leaves an optional operand out)."""
    b = GraphBuilder()
    args = [b.input(f"x{i}", TensorType(a.shape, DType.from_numpy(a.dtype)))
            for i, a in enumerate(inputs)]  # fmt: skip
    args += [b.constant(f"c{i}", c) for i, c in enumerate(consts) if c is not None]
    out = b.op(op, args, attrs)
    return b.build([out]), list(inputs)


def run_cpu(graph: Graph, inputs: Sequence[np.ndarray], **options: Any) -> list[np.ndarray]:
    from cuvil_kernels_cpu.executable import CpuExecutable

    opts = {"threads": 0, "conv_algorithm": "auto", **options}
    return CpuExecutable(graph, opts, plan_memory(graph)).run(list(inputs))


def both(graph: Graph, inputs: Sequence[np.ndarray], **options: Any) -> tuple[np.ndarray, ...]:
    got = run_cpu(graph, inputs, **options)[0]
    want = interpret(graph, list(inputs))[0]
    return got, want
