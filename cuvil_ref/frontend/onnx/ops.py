"""The ONNX converter table: the family tables merged into ``TABLE`` (ONNX op type ->
:class:`~cuvil_ref.frontend.onnx.table.OnnxConverter`). Its keys are the ops Cuvil claims."""

from __future__ import annotations

from cuvil_ref.frontend.onnx import (
    activations,
    attention,
    control,
    conv,
    einsum,
    elementwise,
    functions,
    generators,
    losses,
    ml,
    nn,
    pool,
    quant,
    recurrent,
    reduce,
    resize,
    scatter,
    shape,
    signal,
    tensor,
    text,
)
from cuvil_ref.frontend.onnx.table import OnnxConverter

TABLE: dict[str, OnnxConverter] = {}
for _module in (
    activations,
    pool,
    conv,
    einsum,
    elementwise,
    functions,
    generators,
    shape,
    tensor,
    text,
    nn,
    reduce,
    quant,
    recurrent,
    resize,
    scatter,
    signal,
    losses,
    ml,
    attention,
    control,
):
    for _name, _conv in _module.TABLE.items():
        if _name in TABLE:
            raise RuntimeError(f"ONNX op {_name} has two converters")
        TABLE[_name] = _conv

__all__ = ["TABLE"]
