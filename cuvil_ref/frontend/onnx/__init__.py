"""The ONNX frontend: ``onnx_to_cuvilir(path_or_model)`` imports an ONNX model as a Cuvil Module.

Opsets 13 to 21 are the target (each node resolves to an operator version through the model's
opset, ONNX's own rule, and a converter lists the versions it implements; most also take the
newer versions that only added element types). Initializers become constants, ``Shape``/``Size``
and other shape arithmetic fold at import, and ONNX's own semantics are kept where they differ
from torch's (see the family modules). An op or version Cuvil lacks raises
:class:`~cuvil_ref.errors.UnsupportedOpError` naming the op type, the node and the opset.
Needs the ``onnx`` package: ``pip install 'cuvil-ref[onnx]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuvil_ref.frontend.onnx.importer import InputShapes, import_model, load_model
from cuvil_ref.ir.graph import Module


def onnx_to_cuvilir(
    path_or_model: Any,
    input_shapes: InputShapes = None,
    name: str | None = None,
    constant_inputs: Mapping[str, Any] | None = None,
) -> Module:
    """Import an ONNX model (a file path, its bytes or an ``onnx.ModelProto``) as a verified
    Cuvil Module.

    ``input_shapes`` fixes input sizes the model leaves symbolic (``{"input": (1, 3, 224, 224)}``
    or one shape per input, in order); symbolic sizes otherwise stay named symbols
    (``batch_size``). Inputs and outputs keep the model's order; their ONNX names are in
    ``module.metadata["input_names"]`` and ``["output_names"]`` (JSON lists).
    ``constant_inputs={"axes": np.array([1])}`` imports the model specialized to those input
    values (they become constants and leave the inputs): for inputs that Cuvil needs at import
    time, such as a ``Reshape`` shape or ``Pad`` pads fed as graph inputs
    (:class:`~cuvil_ref.frontend.onnx.context.StaticInputError` names them).
    """
    return import_model(
        load_model(path_or_model),
        input_shapes=input_shapes,
        name=name,
        constant_inputs=constant_inputs,
    )


def supported_ops() -> dict[str, tuple[int, ...]]:
    """ONNX op type -> the operator versions Cuvil implements."""
    from cuvil_ref.frontend.onnx.ops import TABLE

    return {name: conv.versions for name, conv in sorted(TABLE.items())}


__all__ = ["onnx_to_cuvilir", "supported_ops"]
