"""The ``cuda`` pack's lowering table, built from its emitters for the shared kernel templates.

``cuvil_ref.plugin.kit.templates.TEMPLATES`` says which kernel family and formula implement each
op (the table the hip pack shares); ``lower_float``, ``lower_shape`` and ``lower_quant`` give
this pack's emitter for each family: ``emit(node, device inputs, EmitContext)`` runs the kernel
library on device arrays and returns the device outputs. The executable calls every emit once
while recording launches (:func:`cuvil_kernels_cuda.kernels.common.recording`) and afterwards
only replays them, so an emit may allocate and upload freely: that happens once. The table's
keys are the coverage report.

This module is light: it imports neither ``numba.cuda`` nor the kernels (emitters do, lazily).
"""

from __future__ import annotations

from cuvil_kernels_cuda import lower_float, lower_quant, lower_shape
from cuvil_kernels_cuda.lower_common import ALL, FLOAT, EmitContext
from cuvil_ref.plugin.kit import Lowering
from cuvil_ref.plugin.kit.templates import lowerings

EMITTERS = {**lower_float.EMITTERS, **lower_shape.EMITTERS, **lower_quant.EMITTERS}
LOWERINGS: dict[str, Lowering] = lowerings(EMITTERS)

__all__ = ["ALL", "FLOAT", "LOWERINGS", "EmitContext"]
