"""The optimization pipeline per ``opt_level``.

======  =========================================================================================
level   passes
======  =========================================================================================
0       none (the captured graph runs as is)
1       cleanup that never changes results beyond the sign of a zero: ``canonicalize`` (no-op
        reshapes/permutes/casts, x*1, x+0), ``fold_constants``, ``cse``, ``dce``
2       level 1, then fusion: ``fold_batchnorm`` (BN into conv/linear weights),
        ``fuse_epilogue`` (conv/linear/matmul + bias + activation + residual -> one fused op),
        ``fuse_elementwise`` (pointwise chains -> ``fused_elementwise``), ``dce``. Results move
        within f32 rounding (folded weights and biases).
3       level 2, then ``optimize_layout`` (conv/pool/pointwise regions in NHWC, or the target's
        ``TargetPreferences.layout``) and a final ``dce``
======  =========================================================================================

``enable_fusion=False`` removes the passes in ``FUSION_PASSES`` and ``enable_layout_opt=False``
those in ``LAYOUT_PASSES``; a target's :class:`TargetPreferences` can disable passes by name,
append extra ones, and choose the layout the layout pass produces.
"""

from __future__ import annotations

from cuvil_ref.errors import PassError
from cuvil_ref.ir.graph import Module
from cuvil_ref.passes.base import Pass
from cuvil_ref.passes.canonicalize import canonicalize
from cuvil_ref.passes.cse import eliminate_common_subexpressions
from cuvil_ref.passes.dce import eliminate_dead_code
from cuvil_ref.passes.fold_batchnorm import fold_batchnorm
from cuvil_ref.passes.fold_constants import fold_constants
from cuvil_ref.passes.fuse_elementwise import fuse_elementwise
from cuvil_ref.passes.fuse_epilogue import fuse_epilogue
from cuvil_ref.passes.manager import PassManager
from cuvil_ref.passes.optimize_layout import make_optimize_layout, optimize_layout
from cuvil_ref.plugin.types import TargetPreferences

PASSES: dict[str, Pass] = {
    "canonicalize": Pass("canonicalize", canonicalize),
    "fold_constants": Pass("fold_constants", fold_constants, handles_regions=True),
    "cse": Pass("cse", eliminate_common_subexpressions),
    "dce": Pass("dce", eliminate_dead_code, handles_regions=True),
    "fold_batchnorm": Pass("fold_batchnorm", fold_batchnorm),
    "fuse_epilogue": Pass("fuse_epilogue", fuse_epilogue),
    "fuse_elementwise": Pass("fuse_elementwise", fuse_elementwise),
    "optimize_layout": Pass("optimize_layout", optimize_layout),
}

FUSION_PASSES: frozenset[str] = frozenset({"fold_batchnorm", "fuse_epilogue", "fuse_elementwise"})
LAYOUT_PASSES: frozenset[str] = frozenset({"optimize_layout"})

_LEVEL1 = ("canonicalize", "fold_constants", "cse", "dce")
_LEVEL2 = (*_LEVEL1, "fold_batchnorm", "fuse_epilogue", "fuse_elementwise", "dce")
LEVELS: dict[int, tuple[str, ...]] = {
    0: (),
    1: _LEVEL1,
    2: _LEVEL2,
    3: (*_LEVEL2, "optimize_layout", "dce"),
}


def build_pipeline(
    opt_level: int,
    enable_fusion: bool = True,
    enable_layout_opt: bool = True,
    preferences: TargetPreferences | None = None,
) -> list[Pass]:
    prefs = preferences or TargetPreferences()
    if opt_level not in LEVELS:
        raise PassError(f"opt_level must be one of {sorted(LEVELS)}, got {opt_level!r}")
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
    passes = [PASSES[n] for n in names]
    if prefs.layout is not None:
        layout_pass = Pass("optimize_layout", make_optimize_layout(prefs.layout))
        passes = [layout_pass if p.name == "optimize_layout" else p for p in passes]
    return passes


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
