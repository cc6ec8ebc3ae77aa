"""Converters for the closed vocabulary of the torch.export path: Core ATen plus the preserved
high-level ops (see ``cuvil_ref.frontend.decompositions``).

One module per family, each with a ``TABLE`` keyed by ATen schema name (``"aten::cos"``; one
converter serves every overload of a name). ``CORE_TABLE`` merges them; ``coverage.py`` lists the
Core ATen ops Cuvil deliberately leaves out, with the reason, and feeds ``docs/aten-coverage.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_ref.frontend.aten import (
    bags,
    conv,
    core,
    high_level,
    indexing,
    norm,
    pad,
    pool,
    resample,
)

CORE_TABLE: dict[str, Callable[..., Any]] = {}
for _module in (core, high_level, conv, pool, pad, indexing, norm, resample, bags):
    for _name, _conv in _module.TABLE.items():
        if _name in CORE_TABLE:
            raise RuntimeError(f"ATen op {_name} has two converters")
        CORE_TABLE[_name] = _conv

__all__ = ["CORE_TABLE"]
