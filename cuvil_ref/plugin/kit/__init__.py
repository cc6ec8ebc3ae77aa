"""The pack kit: what every kernel pack is built from.

* :class:`Lowering` -- the one lowering record (``lower``, ``dtypes``, ``check``); a pack's table
  maps op names to them and its keys are the pack's coverage.
* :mod:`~cuvil_ref.plugin.kit.checks` -- the legality checks packs share (static shapes,
  symmetric padding, NCHW, per-tensor quantization, int32 accumulation...).
* :class:`KernelPack` -- every hook of the plugin contract, generated from (targets, lowering
  table, executable factory), each answering only for the pack's own targets.
* :mod:`~cuvil_ref.plugin.kit.templates` -- the op -> kernel-template table the GPU packs share.

``docs/plugin-authoring.md`` walks through a pack built on it; ``cuvil pack new`` copies the
example pack in ``cuvil_ref/plugin/example_pack``.
"""

from __future__ import annotations

from cuvil_ref.plugin.kit import checks
from cuvil_ref.plugin.kit.lowering import (
    Check,
    CheckContext,
    Decline,
    Lowering,
    LoweringTable,
    LowerRequest,
    lowering_node,
    no_check,
)
from cuvil_ref.plugin.kit.pack import HOOKS, KernelPack

__all__ = [
    "HOOKS",
    "Check",
    "CheckContext",
    "Decline",
    "KernelPack",
    "LowerRequest",
    "Lowering",
    "LoweringTable",
    "checks",
    "lowering_node",
    "no_check",
]
