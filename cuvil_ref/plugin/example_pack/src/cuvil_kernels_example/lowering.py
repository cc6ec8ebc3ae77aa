"""The lowering table: op name -> kernel, the dtypes it takes, and what it declines.

The keys are this pack's coverage. A node is claimed when its op is here, its first input has
one of the dtypes, and the check (if any) returns None; everything else runs on ``ref`` with the
reason shown in ``cm.report()["partitions"]["fallback"]``.
"""

from __future__ import annotations

from cuvil_kernels_example import kernels
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import families
from cuvil_ref.plugin.kit import CheckContext, Lowering, checks

F32 = frozenset({DType.f32})
ANY = None  # data movement copies bytes: every dtype


def same_f32(node: Node, cx: CheckContext) -> str | None:
    """Every operand f32 (the kernels compute in float32 only)."""
    return checks.dtypes_in(node, F32, *node.inputs, *node.outputs)


def gemm(node: Node, cx: CheckContext) -> str | None:
    if node.op == "matmul" and min(v.type.rank for v in node.inputs) < 2:
        return "matmul: 1-D operands are not supported (both must be at least 2-D)"
    return same_f32(node, cx)


LOWERINGS: dict[str, Lowering] = {
    "relu": Lowering(kernels.relu, F32),
    "relu6": Lowering(kernels.relu6, F32),
    **{op: Lowering(kernels.binary, F32, same_f32) for op in kernels.BINARY_UFUNCS},
    "linear": Lowering(kernels.linear, F32, gemm),
    "matmul": Lowering(kernels.matmul, F32, gemm),
    **{op: Lowering(kernels.view, ANY) for op in families.VIEWS},
}
