"""What every lowering shares: the per-partition ``LowerContext`` and small helpers (static
shapes, storage dtype names, exact C scalar types, grid sizes, the reasons hip kernels decline).

A lowering is the kit's record (``cuvil_ref.plugin.kit.Lowering``) built from this pack's
emitters (``cuvil_ref.plugin.kit.templates``). ``check(node, cx)`` returns None when the pack's
kernels reproduce the interpreter for ``node`` (bit-exact for integers, within the float bound
otherwise) and a reason string when they do not. ``lower(node, ctx)`` appends the node's kernel
launches to ``ctx``: it picks the generator and its parameters, the grid and block, and binds
arguments as buffer names (resolved to arena views at run time) or numpy scalars of the exact C
type. Nothing here touches a device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cuvil_kernels_hip.runtime import Launch
from cuvil_kernels_hip.source import KernelOptions, KernelSource
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node, Value
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.kit import checks

#: IR float dtype -> the generators' storage dtype name.
FLOAT_STORAGE = {DType.f32: "float32", DType.f16: "float16", DType.bf16: "bfloat16"}
MAX_GRID_X = 65535 * 16  # grid-stride kernels need no more blocks than this
MAX_GRID_YZ = 65535
FLOATS = frozenset(FLOAT_STORAGE)
first_reason = checks.first_reason


@dataclass
class LowerContext:
    """Collects launches and extra device constants while one partition is lowered."""

    graph: Graph
    options: KernelOptions
    memory: MemoryPlan
    launches: list[Launch] = field(default_factory=list)
    extra_constants: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def shape(self, value: Value) -> tuple[int, ...]:
        return static_shape(value)

    def const(self, value: Value) -> np.ndarray | None:
        """The compile-time array behind ``value``, if it is a graph constant."""
        return self.graph.constants.get(value.name)

    def add_constant(self, node: Node, what: str, array: np.ndarray) -> str:
        """Register a host-computed device constant (e.g. a multiplier table); returns its name."""
        name = f"{node.outputs[0].name}.{what}"
        self.extra_constants[name] = np.ascontiguousarray(array)
        return name

    def launch(
        self,
        source: KernelSource,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: tuple[object, ...],
    ) -> None:
        self.launches.append(Launch(source, grid, block, args))


def static_shape(value: Value) -> tuple[int, ...]:
    """The shape of ``value`` as ints; raises ValueError naming the symbolic dim."""
    dims = value.type.shape
    for d in dims:
        if not isinstance(d, int):
            raise ValueError(f"value %{value.name} has symbolic dim {d!r}")
    return tuple(int(d) for d in dims)


def float_reason(node: Node, *values: Value) -> str | None:
    """A reason unless every value (default: the node's first input and outputs) is float."""
    return checks.dtypes_in(node, FLOATS, *values)


def same_dtype_reason(node: Node) -> str | None:
    return checks.same_dtype(node)


def storage(value: Value) -> str:
    return FLOAT_STORAGE[value.type.dtype]


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def i32(x: int) -> np.int32:
    return np.int32(x)


def i64(x: int) -> np.int64:
    return np.int64(x)


def f32(x: float) -> np.float32:
    return np.float32(x)


def grid_1d(n: int, block: int, per_thread: int = 1) -> tuple[int, int, int]:
    """Blocks for a grid-stride loop over ``n`` items (at least one block)."""
    return (max(1, min(MAX_GRID_X, -(-n // (block * per_thread)))), 1, 1)
