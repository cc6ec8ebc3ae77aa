"""The hip pack's lowering table, built from its emitters for the shared kernel templates.

``cuvil_ref.plugin.kit.templates.TEMPLATES`` says which kernel family and formula implement each
op (the table the cuda pack shares); the per-family modules in ``cuvil_kernels_hip.lowerings``
give this pack's emitter for each family it implements (lowering, check, the formulas its kernel
library has). ``LOWERINGS``'s keys are the pack's coverage.
"""

from __future__ import annotations

from cuvil_kernels_hip.lowerings import elementwise, gemm, pooling, quant, rows
from cuvil_ref.plugin.kit import Lowering
from cuvil_ref.plugin.kit.templates import lowerings

EMITTERS = {
    **elementwise.EMITTERS,
    **rows.EMITTERS,
    **gemm.EMITTERS,
    **pooling.EMITTERS,
    **quant.EMITTERS,
}
LOWERINGS: dict[str, Lowering] = lowerings(EMITTERS)


def coverage() -> list[str]:
    """The ops this pack can lower (each still subject to its check)."""
    return sorted(LOWERINGS)
