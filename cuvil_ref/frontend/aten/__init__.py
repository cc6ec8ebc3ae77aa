"""Converters for the closed vocabulary of the torch.export path: Core ATen plus the preserved
high-level ops (see ``cuvil_ref.frontend.decompositions``).

One module per family, each with a ``TABLE`` keyed by ATen schema name (``"aten::cos"``; one
converter serves every overload of a name). ``CORE_TABLE`` merges them; ``coverage.py`` lists the
Core ATen ops Cuvil deliberately leaves out, with the reason, and feeds ``docs/aten-coverage.md``.

``HIGHER_ORDER_TABLE`` holds the converters of torch's higher-order ops (``torch.cond``,
``torch.while_loop``: ``control_flow.py``), keyed by the op's name; they receive the export scope
and the fx node, since they convert subgraphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_ref.frontend.aten import (
    arithmetic,
    bags,
    control_flow,
    conv,
    core,
    high_level,
    indexing,
    norm,
    pad,
    pool,
    reductions,
    resample,
    shapes,
    strided,
    unary_math,
)

CORE_TABLE: dict[str, Callable[..., Any]] = {}
for _module in (
    core,
    high_level,
    unary_math,
    arithmetic,
    reductions,
    shapes,
    conv,
    pool,
    pad,
    indexing,
    norm,
    resample,
    bags,
    strided,
):
    for _name, _conv in _module.TABLE.items():
        if _name in CORE_TABLE:
            raise RuntimeError(f"ATen op {_name} has two converters")
        CORE_TABLE[_name] = _conv

HIGHER_ORDER_TABLE: dict[str, Callable[..., Any]] = dict(control_flow.TABLE)

__all__ = ["CORE_TABLE", "HIGHER_ORDER_TABLE"]
