"""Lowering: an optimized IR module -> partitions by target capability -> one executable each.

The tree reads capture (``frontend``) -> ``ir`` -> ``passes`` -> ``lowering`` -> packs:

* :mod:`~cuvil_ref.lowering.partition` asks the target's pack about every node and splits the
  graph into maximal runs per target, with fallback to ``ref``;
* :mod:`~cuvil_ref.lowering.compiler` (``compile_module``) runs quantization and the pass
  pipeline, partitions, plans memory for each partition and lowers each through its pack;
* :mod:`~cuvil_ref.lowering.program` (``CompiledProgram``) runs the lowered partitions in order.
"""

from __future__ import annotations

from cuvil_ref.lowering.compiler import QUANTIZE_MODES, compile_module, merge_options
from cuvil_ref.lowering.partition import (
    REF,
    FallbackNode,
    Partition,
    PartitionPlan,
    partition_graph,
)
from cuvil_ref.lowering.program import CompiledProgram, LoweredPartition

__all__ = [
    "QUANTIZE_MODES",
    "REF",
    "CompiledProgram",
    "FallbackNode",
    "LoweredPartition",
    "Partition",
    "PartitionPlan",
    "compile_module",
    "merge_options",
    "partition_graph",
]
