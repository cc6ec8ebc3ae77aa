"""The ``cuda`` pack's lowerings: a dict keyed by op name. Its keys are the coverage report.

A :class:`Lowering` says which dtypes of the first input it handles, how to check the rest of a
node (``check`` returns the reason to decline, or None) and how to ``emit`` it: run the kernel
library on device arrays and return the device outputs. The executable calls every ``emit`` once
while recording launches (:func:`cuvil_kernels_cuda.kernels.common.recording`) and afterwards
only replays them, so an emit may allocate and upload freely: that happens once.

This module is light: it imports neither ``numba.cuda`` nor the kernels (emitters do, lazily).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_kernels_cuda import lower_float, lower_quant, lower_shape
from cuvil_kernels_cuda.lower_common import ALL, FLOAT, EmitContext
from cuvil_ref.ir.graph import Node

Check = Callable[[Node], "str | None"]
Emit = Callable[[Node, list[Any], EmitContext], list[Any]]


def _no_check(node: Node) -> str | None:
    return None


@dataclass(frozen=True)
class Lowering:
    """How one op runs on the pack."""

    emit: Emit
    dtypes: frozenset[str] = FLOAT
    check: Check = field(default=_no_check)


def _table(entries: Mapping[str, tuple[Any, ...]]) -> dict[str, Lowering]:
    return {name: Lowering(*spec) for name, spec in entries.items()}


LOWERINGS: dict[str, Lowering] = {
    **_table(lower_float.ENTRIES),
    **_table(lower_shape.ENTRIES),
    **_table(lower_quant.ENTRIES),
}

__all__ = ["ALL", "FLOAT", "LOWERINGS", "EmitContext", "Lowering"]
