"""ONNX ops imported through their ONNX function body: ``CausalConvWithState`` and
``LinearAttention`` (opset 27).

ONNX defines these ops as (context-dependent) functions of other ONNX ops: ``onnx.defs`` builds
the body for the node's attributes and input types. The body is converted node by node, like
any graph, so the op has exactly the meaning ONNX gives it. Attribute references in the body
(``ref_attr_name``) take the calling node's attribute, or are dropped when it has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _type_proto(value: Value | None) -> bytes:
    from onnx import TypeProto, helper

    from cuvil_ref.frontend.onnx.importer import ONNX_DTYPES

    if value is None:
        return TypeProto().SerializeToString()
    elem = next(k for k, d in ONNX_DTYPES.items() if d == value.type.dtype)
    shape = [d if isinstance(d, int) else str(d) for d in value.type.shape]
    return helper.make_tensor_type_proto(elem, shape).SerializeToString()


def _bind_attributes(fn: Any, caller: Any) -> None:
    """Replace the body's attribute references by the caller's attributes, in place."""
    given = {a.name: a for a in caller.attribute}
    for node in fn.node:
        kept = []
        for a in node.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in given:
                    bound = type(a)()
                    bound.CopyFrom(given[a.ref_attr_name])
                    bound.name = a.name
                    kept.append(bound)
            else:
                kept.append(a)
        del node.attribute[:]
        node.attribute.extend(kept)


def expand(cx: OnnxContext, node: OnnxNode) -> Sequence[Value | None]:
    """Convert ``node`` as the function body ONNX defines for it."""
    import onnx

    from cuvil_ref.frontend.onnx.importer import convert_node
    from cuvil_ref.frontend.onnx.ops import TABLE as ALL

    proto = node.proto
    if proto is None:
        raise cx.error("internal: the node's proto is needed to expand its function")
    schema = onnx.defs.get_schema(node.op_type, node.opset, node.domain)
    if not schema.has_context_dependent_function:
        raise cx.error("ONNX defines no function body for this op")
    try:
        raw = schema.get_context_dependent_function_with_opset_version(
            node.opset, proto.SerializeToString(), [_type_proto(v) for v in node.inputs]
        )
    except Exception as exc:
        raise cx.error(f"ONNX cannot build the op's function body here: {exc}") from exc
    if not raw:
        raise cx.error("ONNX gives no function body for these attributes and input types")
    fn = onnx.FunctionProto()
    fn.ParseFromString(raw)
    _bind_attributes(fn, proto)
    env: dict[str, Value] = {}
    for name, v in zip(fn.input, node.inputs):
        if v is not None and name:
            env[name] = v
    opsets = {o.domain: int(o.version) for o in fn.opset_import} or dict(cx.opsets)
    outer, scope = cx.node, cx.scope
    cx.scope = env
    try:
        for inner in fn.node:
            convert_node(cx, inner, env, opsets, ALL)
    finally:
        cx.node, cx.scope = outer, scope
    return [env.get(name) if name else None for name in fn.output]


for _op in ("CausalConvWithState", "LinearAttention"):
    onnx_op(TABLE, _op, 27)(expand)

__all__ = ["TABLE", "expand"]
