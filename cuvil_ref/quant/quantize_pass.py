"""Quantization as a pass: ``quantize_module`` wrapped for the pass manager.

The compiler runs it first in the pipeline, so it is timed, verified after (with
``CUVIL_VERIFY_EACH=1`` or ``verify_each=True``), dumped (``CUVIL_DUMP_IR=quantize[int8]``) and
named in errors like every other pass. Its report (per-layer schemes, SQNR...) is kept on the
pass's :class:`QuantizeStep` for ``cm.report()["quantization"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.passes.base import Pass, PassResult


@dataclass
class QuantizeStep:
    """The pass function: quantizes a graph with ``mode`` and remembers the report."""

    mode: str
    calibration_data: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None

    def __call__(self, graph: Graph) -> PassResult:
        from cuvil_ref.quant.api import quantize_module

        module, self.report = quantize_module(
            Module(graph), self.mode, calibration_data=self.calibration_data, **dict(self.options)
        )
        return PassResult(module.graph, True)


def quantize_pass(
    mode: str, calibration_data: Any = None, options: Mapping[str, Any] | None = None
) -> tuple[Pass, QuantizeStep]:
    """The pass ``quantize[<mode>]`` and its step (which holds the report once it ran)."""
    step = QuantizeStep(mode, calibration_data, dict(options or {}))
    return Pass(f"quantize[{mode}]", step, handles_regions=True), step  # it quantizes regions
