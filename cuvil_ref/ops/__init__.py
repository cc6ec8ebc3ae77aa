"""The op set. Importing this package registers every op in ``REGISTRY``.

Each module below declares one family of ops; see ``docs/ops.md`` (generated from the registry).
"""

from __future__ import annotations

from cuvil_ref.ops import (  # noqa: F401  (imported to register their ops)
    activations,
    advanced_indexing,
    bags,
    bitwise,
    comparison,
    control_flow,
    conv,
    conv_nd,
    division,
    elementwise,
    factories,
    fused,
    fused_elementwise,
    indexing,
    join_crop,
    linalg,
    normalization,
    pool_nd,
    pooling,
    qgemm,
    qpool,
    qtransformer,
    quantized,
    rearrange,
    reductions,
    resample,
    rounding,
    scan,
    scatter,
    shape_ops,
    sorting,
    transcendental,
)
from cuvil_ref.ops.registry import REGISTRY, REQUIRED, Attr, OpDef, OpRegistry, get_op, register

__all__ = ["REGISTRY", "REQUIRED", "Attr", "OpDef", "OpRegistry", "get_op", "register"]
