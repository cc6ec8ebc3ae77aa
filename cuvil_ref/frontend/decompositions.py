"""The decomposition table that closes the torch.export path's vocabulary.

``torch.export.export`` yields high-level ATen; ``ExportedProgram.run_decompositions(table)``
lowers every op whose overload is in ``table`` (and every CompositeImplicitAutograd op) to Core
ATen -- the ~190 ops tagged ``torch.Tag.core``, the vocabulary ExecuTorch and Inductor treat as
complete. We start from torch's default table and *remove* the high-level ops Cuvil has natively
(``PRESERVED``): they stay whole, so a layer stays one node (``linear`` rather than
``permute + addmm``), which keeps fusion patterns and per-layer reports readable.

After decomposition a graph holds only Core ATen ops, the preserved ops, ``operator.getitem`` and
symbolic-size arithmetic -- a closed set that ``cuvil_ref.frontend.aten`` covers (see
``docs/aten-coverage.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Container
from typing import Any

from cuvil_ref.frontend.aten.high_level import TABLE as HIGH_LEVEL_TABLE

#: High-level ops kept whole: each has a native Cuvil op (or a small composite of them).
PRESERVED: tuple[str, ...] = (
    "aten::linear",
    "aten::matmul",
    "aten::layer_norm",
    "aten::group_norm",
    "aten::rms_norm",
    "aten::scaled_dot_product_attention",
    "aten::softmax.int",
    "aten::log_softmax.int",
    "aten::silu",
    "aten::hardswish",
    "aten::hardsigmoid",
    "aten::mish",
    "aten::relu6",
    "aten::softplus",
    # a global average pool stays one pool (torch's table lowers it to mean, which the int8
    # packs do not claim: the npu would leave ResNet's head on the host)
    "aten::adaptive_avg_pool2d",
    # Core ATen ops that torch's table would still lower to arange/abs/index chains: Cuvil
    # converts each into one constant-index gather per padded dim (frontend/aten/pad.py).
    "aten::reflection_pad1d",
    "aten::reflection_pad2d",
    "aten::reflection_pad3d",
    "aten::replication_pad1d",
    "aten::replication_pad2d",
    "aten::replication_pad3d",
    # likewise: one constant-index gather per axis (frontend/aten/resample.py)
    "aten::upsample_nearest2d",
    # F.fold: one col2im op instead of an index_put chain (frontend/aten/bags.py)
    "aten::col2im",
)

#: Export's runtime checks: no-ops at inference (``.to(dtype)`` emits the first one).
NO_OPS: frozenset[str] = frozenset(
    {
        "aten::_assert_tensor_metadata",
        "aten::_assert_scalar",
        "aten::_assert_async",
        "aten::sym_constrain_range",
        "aten::sym_constrain_range_for_size",
        "aten::_functional_sym_constrain_range",
        "aten::_functional_sym_constrain_range_for_size",
        "aten::_functional_assert_async",
        "aten::_functional_assert_scalar",
    }
)


#: High-level (pre-decomposition) ops whose converters take their ATen schema faithfully. A graph
#: made only of these, Core ATen ops and ``PRESERVED`` ops skips ``run_decompositions`` -- a
#: second full trace that costs twice as much as the export itself on a BERT-base encoder.
HIGH_LEVEL_CONVERTED: frozenset[str] = frozenset(
    {
        "aten::transpose",
        "aten::to",
        "aten::reshape",
        "aten::dropout",
        "aten::conv2d",
        "aten::contiguous",
        "aten::batch_norm",
        "aten::flatten",
        "aten::lift_fresh_copy",
        "aten::type_as",
        "aten::numpy_T",
        "aten::t",
        "aten::masked_fill",
        "aten::split",
        "aten::chunk",
        "aten::stack",
        "aten::unflatten",
        "aten::adaptive_avg_pool2d",
        "aten::max_pool2d",
        "aten::__and__",
        "aten::__or__",
    }
) | frozenset(HIGH_LEVEL_TABLE)  # diff, new_ones... (frontend/aten/high_level.py)


def needs_decomposition(graph: Any, converted: Container[str]) -> bool:
    """Whether an exported graph holds an op outside Core ATen, the preserved ops and
    ``HIGH_LEVEL_CONVERTED``, or any in-place op (only decomposition makes mutation of views
    functional, so those graphs always take it). ``converted``: the Core ATen op names."""
    preserved = {p.split(".")[0] for p in PRESERVED}
    for node in graph.nodes:
        if node.op == "get_attr":  # the subgraph of a higher-order op (torch.cond...): its ops too
            sub = getattr(graph.owning_module, str(node.target), None)
            if hasattr(sub, "graph") and needs_decomposition(sub.graph, converted):
                return True
            continue
        if node.op != "call_function":
            continue
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            continue
        name = schema.name
        if name in NO_OPS:
            continue
        if (name.endswith("_") and not name.endswith("__")) or schema.is_mutable:
            return True
        if name not in converted and name not in preserved and name not in HIGH_LEVEL_CONVERTED:
            return True
    return False


def _overloads(qualified: str) -> list[Any]:
    """The OpOverloads named by ``aten::name`` (all overloads) or ``aten::name.overload``."""
    import torch

    name = qualified.split("::", 1)[1]
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return []
    names = [overload] if overload else packet.overloads()
    return [getattr(packet, o) for o in names if hasattr(packet, o)]


def decomposition_table() -> dict[Any, Any]:
    """torch's default export decompositions minus ``PRESERVED``, as a plain dict (a fresh copy
    of a table materialized once per process: building torch's lazy table costs ~0.1 s)."""
    return dict(_materialized())


@functools.lru_cache(maxsize=1)
def _materialized() -> tuple[tuple[Any, Any], ...]:
    import torch

    table = torch.export.default_decompositions()
    for qualified in PRESERVED:
        for op in _overloads(qualified):
            table.pop(op, None)
    return tuple(table.items())


__all__ = [
    "HIGH_LEVEL_CONVERTED",
    "NO_OPS",
    "PRESERVED",
    "decomposition_table",
    "needs_decomposition",
]
