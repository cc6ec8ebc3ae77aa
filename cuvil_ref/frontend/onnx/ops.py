"""The ONNX converter table: the family tables merged into ``TABLE`` (ONNX op type ->
:class:`~cuvil_ref.frontend.onnx.table.OnnxConverter`). Its keys are the ops Cuvil claims."""

from __future__ import annotations

from cuvil_ref.frontend.onnx import (
    activations,
    attention,
    conv,
    einsum,
    elementwise,
    generators,
    losses,
    nn,
    pool,
    quant,
    recurrent,
    reduce,
    resize,
    shape,
    signal,
    tensor,
)
from cuvil_ref.frontend.onnx.table import OnnxConverter

TABLE: dict[str, OnnxConverter] = {}
for _module in (
    activations,
    pool,
    conv,
    einsum,
    elementwise,
    generators,
    shape,
    tensor,
    nn,
    reduce,
    quant,
    recurrent,
    resize,
    signal,
    losses,
    attention,
):
    for _name, _conv in _module.TABLE.items():
        if _name in TABLE:
            raise RuntimeError(f"ONNX op {_name} has two converters")
        TABLE[_name] = _conv

__all__ = ["TABLE"]
