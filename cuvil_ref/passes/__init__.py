"""Optimization passes, the pass manager, the pipeline per opt_level, and memory planning."""

from __future__ import annotations

from cuvil_ref.passes.base import Pass, PassResult
from cuvil_ref.passes.manager import PassManager, run_passes
from cuvil_ref.passes.memory_plan import MemoryPlan, plan_memory
from cuvil_ref.passes.pipeline import PASSES, build_pipeline, optimize

__all__ = [
    "PASSES",
    "MemoryPlan",
    "Pass",
    "PassManager",
    "PassResult",
    "build_pipeline",
    "optimize",
    "plan_memory",
    "run_passes",
]
