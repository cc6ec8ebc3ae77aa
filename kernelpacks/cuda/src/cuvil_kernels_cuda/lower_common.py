"""Shared pieces of the emitters: dtype sets, the emit context, lazy kernel modules."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node, Value
from cuvil_ref.plugin.kit import checks

FLOAT = frozenset({DType.f32, DType.f16})
INT8 = frozenset({DType.i8})
#: Every dtype the pack can move (bf16 has no numpy/numba storage type here).
ALL = FLOAT | frozenset({DType.i8, DType.u8, DType.i32, DType.i64, DType.bool})
INF = float("inf")


def kernels(name: str) -> ModuleType:
    """``cuvil_kernels_cuda.kernels.<name>``, imported on first use (it imports numba.cuda)."""
    return importlib.import_module(f"cuvil_kernels_cuda.kernels.{name}")


@dataclass
class EmitContext:
    """What an emitter needs besides its node: symbol bindings and the GEMM tile."""

    bindings: Mapping[str, int] = field(default_factory=dict)
    tile: int = 0

    def shape(self, value: Value) -> tuple[int, ...]:
        """``value``'s shape with its symbolic dims replaced by their bound sizes."""
        out = []
        for d in value.type.shape:
            if isinstance(d, str):
                if d not in self.bindings:
                    raise ValueError(f"%{value.name}: symbolic dim '{d}' is not bound by an input")
                out.append(int(self.bindings[d]))
            else:
                out.append(int(d))
        return tuple(out)


def dtype_of(value: Value) -> str:
    return value.type.dtype.value


def pads(node: Node) -> tuple[int, int]:
    """``(ph, pw)`` of a node its check admitted (symmetric padding)."""
    p = checks.symmetric_padding(node)
    assert not isinstance(p, str), p
    return p


def first(attrs: Mapping[str, Any], name: str, default: Any) -> Any:
    value = attrs.get(name, default)
    return default if value is None else value
