"""The ``cuda`` kernel pack's hook implementations (entry point ``cuda`` of ``cuvil.kernelpacks``).

Importing this module is light: it never imports ``numba.cuda`` (availability does, when asked)
nor the kernels (lowering does). Node support is read from :data:`lowering.LOWERINGS`: an op is
claimed exactly when it has a lowering, its dtypes are handled and its ``check`` passes.
"""

from __future__ import annotations

from typing import Any

from cuvil_kernels_cuda import device
from cuvil_kernels_cuda.lowering import LOWERINGS
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

NAME = "cuda"

OPTIONS = (
    OptionSpec(
        "loop_unroll_factor", int, 1,
        "unroll factor (1..16) of the K loop of the GEMV kernel used for skinny (batch-1) GEMMs; "
        "the tiled GEMM/conv loops have constant trip counts that Numba/LLVM unrolls fully",
        minimum=1, maximum=16,
    ),
    OptionSpec(
        "tile", int, 0, "GEMM/conv tile edge: 8, 16 or 32 (0 = auto: 8 in the simulator, 16 on "
        "a GPU)", choices=(0, 8, 16, 32),
    ),
    OptionSpec("use_cuda_graph", bool, False, "capture each plan's launches into a CUDA graph"),
    OptionSpec(
        "fp16", bool, True,
        "claim float16 nodes (float16 storage, float32 arithmetic); False leaves them to ref",
    ),
)  # fmt: skip

INFO = TargetInfo(
    name=NAME,
    description="Numba-CUDA kernels (runs in Numba's CUDA simulator without a GPU)",
    aliases=("nvidia/nvrtc", "nvidia/cuda", "gpu"),
    arch="cuda",
    features=("sm_90", "tensor_core"),
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
    ok, why = device.availability()
    return Availability(True, "", why) if ok else Availability(False, why)


@hookimpl
def cuvil_validate_options(target: TargetSpec, options: dict[str, Any]) -> dict[str, Any] | None:
    if not _mine(target):
        return None
    return validate_with_specs(NAME, OPTIONS, options)


@hookimpl
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    if not _mine(target):
        return None
    return TargetPreferences(layout="NCHW")


def support(node: Node, fp16: bool = True) -> Support:
    """The pack's answer for ``node`` (also used directly by tests)."""
    lowering = LOWERINGS.get(node.op)
    if lowering is None:
        return Support.no(f"op '{node.op}' has no cuda lowering")
    for v in (*node.inputs, *node.outputs):
        dtype = v.type.dtype.value
        if dtype == "bf16":
            return Support.no("dtype bf16 not supported")
        if dtype == "f16" and not fp16:
            return Support.no("dtype f16 disabled by option fp16=False")
    first = node.inputs[0].type.dtype.value if node.inputs else "f32"
    if first not in lowering.dtypes:
        accepted = ", ".join(sorted(lowering.dtypes))
        return Support.no(f"dtype {first} not supported for {node.op} (accepted: {accepted})")
    reason = lowering.check(node)
    return Support.no(reason) if reason else Support.yes()


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if not _mine(target):
        return None
    return support(node, bool(target.options.get("fp16", True)))


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if not _mine(target):
        return None
    from cuvil_kernels_cuda.executable import CudaExecutable

    return CudaExecutable(graph, options)
