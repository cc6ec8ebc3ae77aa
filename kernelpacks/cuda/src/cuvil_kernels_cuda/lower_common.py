"""Shared pieces of the lowerings: dtype sets, the emit context, lazy kernel modules, checks."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from cuvil_ref.ir.graph import Node, Value

FLOAT = frozenset({"f32", "f16"})
INT8 = frozenset({"i8"})
#: Every dtype the pack can move (bf16 has no numpy/numba storage type here).
ALL = frozenset({"f32", "f16", "i8", "u8", "i32", "i64", "bool"})
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


def symmetric_pads(op: str, padding: Sequence[int]) -> tuple[int, int] | str:
    """(ph, pw) of a 2- or 4-int padding (top, left, bottom, right), or the reason to decline."""
    p = tuple(int(v) for v in padding)
    if len(p) == 2:
        p = (p[0], p[1], p[0], p[1])
    if len(p) != 4:
        return f"{op}: padding {p} must have 2 or 4 entries"
    if min(p) < 0:
        return f"{op}: negative pads {p} not supported"
    if p[0] != p[2] or p[1] != p[3]:
        return f"{op}: asymmetric padding {p} (top, left, bottom, right) not supported"
    return p[0], p[1]


def window_check(node: Node, dilation: bool) -> str | None:
    """Pooling windows the library handles: symmetric padding of at most half the kernel."""
    a = node.attrs
    pads = symmetric_pads(node.op, a["padding"])
    if isinstance(pads, str):
        return pads
    k = a["kernel"]
    if len(k) != 2 or pads[0] > k[0] // 2 or pads[1] > k[1] // 2:
        return f"{node.op}: padding {pads} larger than half the kernel {tuple(k)} not supported"
    if node.inputs[0].type.rank != 4:
        return f"{node.op}: only NCHW (rank-4) inputs are supported"
    if dilation and tuple(a.get("dilation", (1, 1))) != (1, 1) and node.op.startswith("qavg"):
        return f"{node.op}: dilation not supported"
    return None


def first(attrs: Mapping[str, Any], name: str, default: Any) -> Any:
    value = attrs.get(name, default)
    return default if value is None else value
