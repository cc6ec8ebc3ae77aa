"""What every lowering shares: the ``Lowering`` record, the per-partition ``LowerContext`` and
small helpers (static shapes, storage dtype names, exact C scalar types, grid sizes).

A lowering is two pure functions. ``check(node, graph)`` returns None when the pack's kernels
reproduce the interpreter for ``node`` (bit-exact for integers, within the float bound
otherwise) and a reason string when they do not. ``lower(node, ctx)`` appends the node's kernel
launches to ``ctx``: it picks the generator and its parameters, the grid and block, and binds
arguments as buffer names (resolved to arena views at run time) or numpy scalars of the exact C
type. Nothing here touches a device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from cuvil_kernels_hip.runtime import Launch
from cuvil_kernels_hip.source import KernelOptions, KernelSource
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node, Value

#: IR float dtype -> the generators' storage dtype name.
FLOAT_STORAGE = {DType.f32: "float32", DType.f16: "float16", DType.bf16: "bfloat16"}
MAX_GRID_X = 65535 * 16  # grid-stride kernels need no more blocks than this
MAX_GRID_YZ = 65535

Check = Callable[[Node, Graph], "str | None"]


@dataclass
class LowerContext:
    """Collects launches and extra device constants while one partition is lowered."""

    graph: Graph
    options: KernelOptions
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


@dataclass(frozen=True)
class Lowering:
    """An op's capability check and its lowering."""

    check: Check
    lower: Callable[[Node, LowerContext], None]


def static_shape(value: Value) -> tuple[int, ...]:
    """The shape of ``value`` as ints; raises ValueError naming the symbolic dim."""
    dims = value.type.shape
    for d in dims:
        if not isinstance(d, int):
            raise ValueError(f"value %{value.name} has symbolic dim {d!r}")
    return tuple(int(d) for d in dims)


def symbolic_reason(node: Node) -> str | None:
    """A reason when any input or output of ``node`` has a symbolic dim, else None."""
    for v in (*node.inputs, *node.outputs):
        for d in v.type.shape:
            if not isinstance(d, int):
                return (
                    f"symbolic dim {d!r} in %{v.name}: the hip pack plans launches for static "
                    "shapes; compile with a concrete input shape"
                )
    return None


def float_reason(node: Node, *values: Value) -> str | None:
    """A reason unless every value (default: the node's first input and outputs) is float."""
    for v in values or (node.inputs[0], *node.outputs):
        if v.type.dtype not in FLOAT_STORAGE:
            return (
                f"dtype {v.type.dtype.value} of %{v.name}: the hip '{node.op}' kernel stores "
                f"f32/f16/bf16 only"
            )
    return None


def same_dtype_reason(node: Node) -> str | None:
    dtypes = {v.type.dtype for v in (*node.inputs, *node.outputs)}
    if len(dtypes) > 1:
        names = sorted(d.value for d in dtypes)
        return f"mixed dtypes {names}: the hip kernels take one storage dtype per kernel"
    return None


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


def first_reason(*reasons: str | None) -> str | None:
    return next((r for r in reasons if r), None)
