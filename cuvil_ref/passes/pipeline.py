"""The optimization pipeline per ``opt_level``.

======  =========================================================================================
level   passes
======  =========================================================================================
0       none (the captured graph runs as is)
1       dead-code elimination
2       level 1 (more passes are added as they land)
3       level 2
======  =========================================================================================

``enable_fusion=False`` removes the fusion passes and ``enable_layout_opt=False`` the layout pass;
a target's :class:`TargetPreferences` can disable passes by name or append extra ones.
"""

from __future__ import annotations

from cuvil_ref.errors import PassError
from cuvil_ref.ir.graph import Module
from cuvil_ref.passes.base import Pass
from cuvil_ref.passes.dce import eliminate_dead_code
from cuvil_ref.passes.manager import PassManager
from cuvil_ref.plugin.types import TargetPreferences

PASSES: dict[str, Pass] = {
    "dce": Pass("dce", eliminate_dead_code),
}

FUSION_PASSES: frozenset[str] = frozenset()
LAYOUT_PASSES: frozenset[str] = frozenset()

LEVELS: dict[int, tuple[str, ...]] = {
    0: (),
    1: ("dce",),
    2: ("dce",),
    3: ("dce",),
}


def build_pipeline(
    opt_level: int,
    enable_fusion: bool = True,
    enable_layout_opt: bool = True,
    preferences: TargetPreferences | None = None,
) -> list[Pass]:
    prefs = preferences or TargetPreferences()
    names = [
        n
        for n in LEVELS[opt_level]
        if (enable_fusion or n not in FUSION_PASSES)
        and (enable_layout_opt or n not in LAYOUT_PASSES)
        and n not in prefs.disable_passes
    ]
    for extra in prefs.extra_passes:
        if extra not in PASSES:
            raise PassError(f"target asks for unknown pass '{extra}'; known: {sorted(PASSES)}")
        names.append(extra)
    return [PASSES[n] for n in names]


def optimize(
    module: Module,
    *,
    opt_level: int = 2,
    enable_fusion: bool = True,
    enable_layout_opt: bool = True,
    preferences: TargetPreferences | None = None,
    verify_each: bool | None = None,
) -> tuple[Module, list[dict]]:
    """Run the pipeline for ``opt_level``; returns the new module and per-pass timings."""
    passes = build_pipeline(opt_level, enable_fusion, enable_layout_opt, preferences)
    return PassManager(passes, verify_each=verify_each).run(module)
