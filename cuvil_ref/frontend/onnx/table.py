"""The converter table of the ONNX importer: one entry per ONNX op type.

Each family module (``elementwise``, ``shape``, ``nn``...) declares its converters with
:func:`onnx_op`, naming the ONNX op type and the operator versions (schema ``since_version``
numbers) the converter implements. A model's node resolves to one version through its opset
(ONNX's own rule: the newest version not above the model's opset); a version the converter does
not list is refused with the versions it does. The table's keys are the ops Cuvil claims, and
``docs/onnx-coverage.md`` is generated from them and the node-test run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.ir.graph import Value

Result = Value | Sequence[Value | None]
ConvertFn = Callable[[OnnxContext, OnnxNode], Result]


@dataclass(frozen=True)
class OnnxConverter:
    """How one ONNX op type becomes IR: the function and the operator versions it implements."""

    op_type: str
    fn: ConvertFn
    versions: tuple[int, ...]
    domain: str = ""  # "" (ai.onnx) or "ai.onnx.ml"

    def supports(self, version: int) -> bool:
        return version in self.versions


def onnx_op(
    table: dict[str, OnnxConverter], op_type: str, *versions: int, domain: str = ""
) -> Callable[[ConvertFn], ConvertFn]:
    """Register the decorated function as ``table[op_type]`` for the given operator versions
    (of the default domain, or of ``domain="ai.onnx.ml"``)."""

    def register(fn: ConvertFn) -> ConvertFn:
        if op_type in table:
            raise RuntimeError(f"ONNX op {op_type} has two converters")
        table[op_type] = OnnxConverter(op_type, fn, tuple(sorted(versions)), domain)
        return fn

    return register


__all__ = ["ConvertFn", "OnnxConverter", "Result", "onnx_op"]
