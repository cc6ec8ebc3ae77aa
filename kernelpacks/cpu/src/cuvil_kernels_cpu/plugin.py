"""The ``cpu`` kernel pack's hook implementations (entry point ``cpu`` of ``cuvil.kernelpacks``).

Importing this module is light: it imports neither numba nor the kernels (lowering does).
Node support is read from :data:`cuvil_kernels_cpu.lowering.LOWERINGS`: an op is claimed exactly
when it has a lowering, its dtype is handled and its ``check`` passes.
"""

from __future__ import annotations

from typing import Any

from cuvil_kernels_cpu.lowering import check_node
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

NAME = "cpu"

OPTIONS = (
    OptionSpec(
        "threads", int, 0,
        "threads per inference for the parallel kernels (0 = every core Numba may use; "
        "NUMBA_NUM_THREADS caps it). 1 runs each inference on its caller's thread only",
        minimum=0, maximum=1024,
    ),
    OptionSpec(
        "conv_algorithm", str, "auto",
        "3x3 convolution algorithm: auto (cost model), measure (time the candidates once per "
        "shape, cached on disk), im2col, winograd (where legal)",
        choices=("auto", "measure", "im2col", "winograd"),
    ),
    OptionSpec(
        "low_precision", bool, True,
        "claim f16/bf16 nodes (low-precision storage, float32 arithmetic); False: ref runs them",
    ),
)  # fmt: skip

INFO = TargetInfo(
    name=NAME,
    description="Numba CPU kernels: register-tiled GEMM/conv, Winograd, int8 VNNI; GIL released",
    aliases=("x86", "numba-cpu"),
    arch="cpu",
    options=OPTIONS,
)


def _mine(target: TargetSpec) -> bool:
    return target.name == NAME


@hookimpl
def cuvil_plugin_api_version() -> str:
    return PLUGIN_API_VERSION


@hookimpl
def cuvil_targets() -> list[TargetInfo]:
    return [INFO]


@hookimpl
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    if not _mine(target):
        return None
    try:
        from cuvil_kernels_cpu.kernels import isa
    except Exception as exc:  # numba/llvmlite missing or broken: unavailable, with the reason
        return Availability(False, f"numba could not be loaded: {type(exc).__name__}: {exc}")
    return Availability(True, "", isa.describe())


@hookimpl
def cuvil_validate_options(target: TargetSpec, options: dict[str, Any]) -> dict[str, Any] | None:
    if not _mine(target):
        return None
    return validate_with_specs(NAME, OPTIONS, options)


@hookimpl
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    if not _mine(target):
        return None
    return TargetPreferences(layout="NHWC")


def support(node: Node, graph: Graph, low_precision: bool = True) -> Support:
    """The pack's answer for ``node`` (also used directly by tests)."""
    if not low_precision:
        for v in (*node.inputs, *node.outputs):
            if v.type.dtype.value in ("f16", "bf16"):
                return Support.no(f"dtype {v.type.dtype.value} disabled by low_precision=False")
    reason = check_node(node, graph)
    return Support.no(reason) if reason else Support.yes()


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if not _mine(target):
        return None
    return support(node, graph, bool(target.options.get("low_precision", True)))


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if not _mine(target):
        return None
    from cuvil_kernels_cpu.executable import CpuExecutable

    return CpuExecutable(graph, options)
