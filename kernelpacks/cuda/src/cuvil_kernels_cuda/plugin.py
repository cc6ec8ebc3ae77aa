"""The ``cuda`` kernel pack's hooks (entry point ``cuda`` of ``cuvil.kernelpacks``), generated
by the pack kit from the target, the lowering table and the executable factory.

Importing this module is light: it never imports ``numba.cuda`` (availability does, when asked)
nor the kernels (lowering does).
"""

from __future__ import annotations

from cuvil_kernels_cuda import device
from cuvil_kernels_cuda.lowering import LOWERINGS
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin import (
    Availability,
    Executable,
    OptionSpec,
    TargetInfo,
    TargetPreferences,
    TargetSpec,
)
from cuvil_ref.plugin.kit import CheckContext, KernelPack, LowerRequest

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


def available(target: TargetSpec) -> Availability:
    ok, why = device.availability()
    return Availability(True, "", why) if ok else Availability(False, why)


def storage(node: Node, cx: CheckContext) -> str | None:
    """bf16 has no numpy/numba storage type here; f16 is claimed unless ``fp16=False``."""
    for v in (*node.inputs, *node.outputs):
        if v.type.dtype == DType.bf16:
            return "dtype bf16 not supported"
        if v.type.dtype == DType.f16 and not cx.target.options.get("fp16", True):
            return "dtype f16 disabled by option fp16=False"
    return None


def executable(request: LowerRequest) -> Executable:
    from cuvil_kernels_cuda.executable import CudaExecutable

    return CudaExecutable(request.graph, request.options, request.memory_plan)


PACK = KernelPack(
    name=NAME,
    targets=(INFO,),
    lowerings=LOWERINGS,
    executable=executable,
    available=available,
    preferences=TargetPreferences(layout="NCHW"),
    checks=(storage,),
)
PACK.export(globals())
