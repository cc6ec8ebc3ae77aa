"""The hip kernel pack's hook implementations (entry point ``hip = "cuvil_kernels_hip.plugin"``).

Importing this module is light: CuPy is imported only by ``runtime``/``executable`` functions
when availability is probed or a partition is lowered on a device.
"""

from __future__ import annotations

from typing import Any

from cuvil_kernels_hip import runtime
from cuvil_kernels_hip.lowering import support_reason
from cuvil_kernels_hip.source import UNROLL_FACTORS
from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION, hookimpl
from cuvil_ref.plugin.host import validate_with_specs
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import (
    Availability,
    Executable,
    OptionSpec,
    Support,
    TargetInfo,
    TargetPreferences,
)

NAME = "hip"
BLOCK_SIZES = (64, 128, 256, 512, 1024)
OPTIONS = (
    OptionSpec(
        "loop_unroll_factor",
        int,
        4,
        "manual unroll of every hot loop (#pragma unroll N and N copies of the body)",
        choices=UNROLL_FACTORS,
    ),
    OptionSpec("block_size", int, 256, "threads per block of 1-D kernels", choices=BLOCK_SIZES),
    OptionSpec("use_graph", bool, True, "capture each partition into a CUDA graph and replay it"),
)
INFO = TargetInfo(
    name=NAME,
    description="CuPy RawModule kernels in portable HIP/CUDA C (NVIDIA via NVRTC, AMD via hiprtc)",
    aliases=("amd/hiprtc", "amd/rocm", "cupy"),
    arch="hip",
    options=OPTIONS,
)


@hookimpl
def cuvil_plugin_api_version() -> str:
    return PLUGIN_API_VERSION


@hookimpl
def cuvil_targets() -> list[TargetInfo]:
    return [INFO]


@hookimpl
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    if target.name != NAME:
        return None
    ok, text = runtime.availability()
    return Availability(True, "", text) if ok else Availability(False, text)


@hookimpl
def cuvil_validate_options(target: TargetSpec, options: dict[str, Any]) -> dict[str, Any] | None:
    if target.name != NAME:
        return None
    return validate_with_specs(NAME, OPTIONS, options)


@hookimpl
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    if target.name != NAME:
        return None
    return TargetPreferences(layout="NCHW")  # the conv and pool kernels are NCHW


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if target.name != NAME:
        return None
    reason = support_reason(node, graph)
    return Support.yes() if reason is None else Support.no(reason)


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if target.name != NAME:
        return None
    from cuvil_kernels_hip.executable import HipExecutable
    from cuvil_kernels_hip.planning import plan_partition

    ok, why = runtime.availability()
    if not ok:
        raise TargetError(f"target 'hip' is not available on this machine: {why}")
    features = tuple(target.features) or runtime.device_features()
    plan = plan_partition(graph, options, features)
    return HipExecutable(plan, use_graph=bool(options.get("use_graph", True)))
