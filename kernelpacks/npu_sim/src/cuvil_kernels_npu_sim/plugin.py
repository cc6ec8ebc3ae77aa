"""Cuvil hook implementations: the npu_sim kernel pack (targets `npu-v3`, `npu-v2`).

Loaded through the `cuvil.kernelpacks` entry point `npu_sim`. Importing this module only pulls
in the core's plugin records and the pack's config; lowering and simulation modules are imported
inside the hooks that need them. Both targets are simulators, hence always available.
"""

from __future__ import annotations

from typing import Any

from cuvil_kernels_npu_sim.config import TARGETS
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION, hookimpl
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import (
    Availability,
    Executable,
    Support,
    TargetInfo,
    TargetPreferences,
)

_DESCRIPTIONS = {
    "npu-v3": "simulated int8 NPU: 32x32 weight-stationary MAC array, 1 GHz, cycle/energy model",
    "npu-v2": "simulated int8 NPU: 16x16 weight-stationary MAC array, 0.8 GHz, cycle/energy model",
}


def _mine(target: TargetSpec) -> bool:
    return target.name in TARGETS


@hookimpl
def cuvil_plugin_api_version() -> str:
    return PLUGIN_API_VERSION


@hookimpl
def cuvil_targets() -> list[TargetInfo]:
    from cuvil_kernels_npu_sim.options import option_specs

    return [
        TargetInfo(
            name=name,
            description=_DESCRIPTIONS[name],
            arch="npu",
            features=("int8",),
            options=option_specs(name),
            quantized_only=True,
        )
        for name in TARGETS
    ]


@hookimpl
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    if not _mine(target):
        return None
    from cuvil_kernels_npu_sim.executable import describe_device
    from cuvil_kernels_npu_sim.options import config_for

    cfg = config_for(target.name, target.options)
    return Availability(True, "", describe_device(cfg))


@hookimpl
def cuvil_validate_options(target: TargetSpec, options: dict[str, Any]) -> dict[str, Any] | None:
    if not _mine(target):
        return None
    from cuvil_kernels_npu_sim.options import validate_options

    return validate_options(target.name, options)


@hookimpl
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    if not _mine(target):
        return None
    return TargetPreferences(requires_quantize="int8")


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if not _mine(target):
        return None
    from cuvil_kernels_npu_sim.lowering import check_node
    from cuvil_kernels_npu_sim.options import config_for

    reason = check_node(node, graph, config_for(target.name, target.options))
    return Support.yes() if reason is None else Support.no(reason)


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if not _mine(target):
        return None
    from cuvil_kernels_npu_sim.partition import lower_partition

    return lower_partition(target.name, graph, options)
