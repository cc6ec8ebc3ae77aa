"""The ONNX converter table: the family tables merged into ``TABLE`` (ONNX op type ->
:class:`~cuvil_ref.frontend.onnx.table.OnnxConverter`). Its keys are the ops Cuvil claims."""

from __future__ import annotations

from cuvil_ref.frontend.onnx import (
    attention,
    conv,
    elementwise,
    losses,
    nn,
    quant,
    reduce,
    resize,
    shape,
    tensor,
)
from cuvil_ref.frontend.onnx.table import OnnxConverter

TABLE: dict[str, OnnxConverter] = {}
for _module in (conv, elementwise, shape, tensor, nn, reduce, quant, resize, losses, attention):
    for _name, _conv in _module.TABLE.items():
        if _name in TABLE:
            raise RuntimeError(f"ONNX op {_name} has two converters")
        TABLE[_name] = _conv

__all__ = ["TABLE"]
