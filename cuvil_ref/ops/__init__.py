"""The op set. Importing this package registers every op in ``REGISTRY``.

Each module below declares one family of ops; see ``docs/ops.md`` (generated from the registry).
"""

from __future__ import annotations

from cuvil_ref.ops import (  # noqa: F401  (imported to register their ops)
    activations,
    advanced_indexing,
    bags,
    comparison,
    control_flow,
    conv,
    conv_nd,
    elementwise,
    factories,
    fused,
    indexing,
    linalg,
    normalization,
    pool_nd,
    pooling,
    qgemm,
    qpool,
    qtransformer,
    quantized,
    reductions,
    resample,
    scatter,
    selection,
    shape_ops,
)
from cuvil_ref.ops.registry import REGISTRY, REQUIRED, Attr, OpDef, OpRegistry, get_op, register

__all__ = ["REGISTRY", "REQUIRED", "Attr", "OpDef", "OpRegistry", "get_op", "register"]
