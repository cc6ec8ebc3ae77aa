"""Walk an ONNX graph and build the Cuvil IR module: inputs, initializers as constants, one
converter call per node (``ops.TABLE``), outputs checked against their declared types.

Every failure is a :class:`~cuvil_ref.errors.CaptureError`: a file that is not ONNX, a dtype Cuvil
lacks, an op (or an operator version) without a converter -- an
:class:`~cuvil_ref.errors.UnsupportedOpError` naming the op type, the node and the opset -- or a
converter's own failure, re-raised as "while importing <node>".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError, CuvilError, UnsupportedOpError
from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.ir.builder import sanitize_name
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Module, Value
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ir.verifier import verify

#: ONNX TensorProto element types Cuvil has, by their TensorProto number.
ONNX_DTYPES: dict[int, DType] = {
    1: DType.f32,
    2: DType.u8,
    3: DType.i8,
    5: DType.i16,
    6: DType.i32,
    7: DType.i64,
    9: DType.bool,
    10: DType.f16,
    11: DType.f64,
    16: DType.bf16,
    4: DType.u16,
    12: DType.u32,
    13: DType.u64,
    17: DType.f8e4m3fn,
    18: DType.f8e4m3fnuz,
    19: DType.f8e5m2,
    20: DType.f8e5m2fnuz,
    21: DType.u4,
    22: DType.i4,
    23: DType.f4e2m1,
    24: DType.f8e8m0,
    25: DType.u2,
    26: DType.i2,
}
DEFAULT_DOMAINS = ("", "ai.onnx")
ML_DOMAIN = "ai.onnx.ml"

InputShapes = Mapping[str, Sequence[int]] | Sequence[Sequence[int]] | None


def dtype_of(elem_type: int, what: str) -> DType:
    """The Cuvil dtype of an ONNX element type; a type Cuvil lacks is refused by name."""
    try:
        return ONNX_DTYPES[elem_type]
    except KeyError:
        import onnx

        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in _known() else elem_type
        have = ", ".join(onnx.TensorProto.DataType.Name(k) for k in ONNX_DTYPES)
        raise UnsupportedOpError(
            f"{what} has ONNX element type {name}, which Cuvil has no dtype for (it has: {have})"
        ) from None


def _known() -> set[int]:
    import onnx

    return set(onnx.TensorProto.DataType.values())


def load_model(path_or_model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path, bytes or a ModelProto; malformed files are refused."""
    try:
        import onnx
    except ImportError:  # pragma: no cover - the extra is missing
        raise CaptureError(
            "ONNX import needs the onnx package: pip install 'cuvil-ref[onnx]'"
        ) from None
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model
    try:
        if isinstance(path_or_model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(path_or_model))
        if isinstance(path_or_model, (str, os.PathLike)):
            if not os.path.isfile(path_or_model):
                raise CaptureError(f"ONNX model file {os.fspath(path_or_model)!r} does not exist")
            return onnx.load(os.fspath(path_or_model))
    except CuvilError:
        raise
    except Exception as exc:  # protobuf DecodeError, a bad external-data reference...
        raise CaptureError(f"{path_or_model!r} is not a readable ONNX model: {exc}") from exc
    raise CaptureError(
        f"expected an ONNX file path, bytes or onnx.ModelProto, got {type(path_or_model).__name__}"
    )


def import_model(
    model: Any,
    input_shapes: InputShapes = None,
    name: str | None = None,
    constant_inputs: Mapping[str, Any] | None = None,
) -> Module:
    """Convert a loaded ``onnx.ModelProto`` (see :func:`cuvil_ref.frontend.onnx_to_cuvilir`)."""
    from onnx import numpy_helper

    from cuvil_ref.frontend.onnx.ops import TABLE

    opsets = {o.domain: int(o.version) for o in model.opset_import}
    default = next((opsets[d] for d in DEFAULT_DOMAINS if d in opsets), None)
    if default is None and ML_DOMAIN not in opsets:
        raise CaptureError("the ONNX model imports no default-domain (ai.onnx) opset")
    graph = model.graph
    cx = OnnxContext()
    env: dict[str, Value] = {}
    cx.scope, cx.opsets = env, opsets
    for init in graph.initializer:
        dtype_of(init.data_type, f"initializer '{init.name}'")
        try:
            array = numpy_helper.to_array(init)
        except Exception as exc:
            raise CaptureError(f"initializer '{init.name}' cannot be read: {exc}") from exc
        env[init.name] = cx.constant(np.array(array), init.name)
    for s in graph.sparse_initializer:
        raise UnsupportedOpError(f"sparse initializer '{s.values.name}' is not supported")
    real = [vi.name for vi in graph.input if vi.name not in env]
    for key, value in (constant_inputs or {}).items():
        if key not in real:
            raise CaptureError(
                f"constant_inputs names '{key}', which is not an input of the model ({real})"
            )
        vi = next(v for v in graph.input if v.name == key)
        want = _input_type(vi, tuple(np.shape(value)))
        arr = np.asarray(value)
        if arr.dtype != want.dtype.numpy:
            raise CaptureError(
                f"constant_inputs['{key}'] has dtype {arr.dtype}; the model's input is "
                f"{want.dtype.value}"
            )
        env[key] = cx.constant(arr, key)
    shapes = _shape_overrides(graph, input_shapes, env)
    names = []
    for vi in graph.input:
        if vi.name in env:  # an initializer listed as an input (IR < 4), or a constant input
            continue
        env[vi.name] = cx.builder.input(vi.name, _input_type(vi, shapes.get(vi.name)))
        cx.graph_inputs[env[vi.name].name] = vi.name
        cx.depends[env[vi.name].name] = frozenset({vi.name})
        names.append(vi.name)
    for node in graph.node:
        convert_node(cx, node, env, opsets, TABLE)
    outputs = []
    for vo in graph.output:
        if vo.name not in env:
            raise CaptureError(f"graph output '{vo.name}' is produced by no node")
        value = env[vo.name]
        declared = vo.type.tensor_type.elem_type if vo.type.HasField("tensor_type") else 0
        if declared and dtype_of(declared, f"output '{vo.name}'") != value.type.dtype:
            raise CaptureError(
                f"graph output '{vo.name}' is declared {DType(ONNX_DTYPES[declared]).value} but "
                f"imports as {value.type}; a converter bug: please report it"
            )
        outputs.append(value)
    metadata = {
        "producer": "cuvil_ref.frontend.onnx",
        "capture": "onnx",
        "onnx_opset": str(default),
        "onnx_producer": f"{model.producer_name} {model.producer_version}".strip(),
        "input_names": json.dumps(names),
        "output_names": json.dumps([vo.name for vo in graph.output]),
    }
    module = Module(
        cx.builder.build(outputs),
        name=sanitize_name(name or graph.name or "onnx_model"),
        metadata=metadata,
    )
    verify(module)
    return module


def _shape_overrides(
    graph: Any, input_shapes: InputShapes, env: Mapping[str, Value]
) -> dict[str, tuple[int, ...]]:
    if input_shapes is None:
        return {}
    real = [vi.name for vi in graph.input if vi.name not in env]
    if isinstance(input_shapes, Mapping):
        unknown = sorted(set(input_shapes) - set(real))
        if unknown:
            raise CaptureError(
                f"input_shapes names {unknown}, which are not inputs of the model (it has: {real})"
            )
        return {k: tuple(int(d) for d in v) for k, v in input_shapes.items()}
    shapes = list(input_shapes)
    if shapes and all(isinstance(d, int) for d in shapes):
        shapes = [shapes]  # one shape for a single-input model
    if len(shapes) != len(real):
        raise CaptureError(f"input_shapes gives {len(shapes)} shapes for {len(real)} inputs {real}")
    return {n: tuple(int(d) for d in s) for n, s in zip(real, shapes)}  # type: ignore[union-attr]


def _input_type(vi: Any, override: tuple[int, ...] | None) -> TensorType:
    if not vi.type.HasField("tensor_type"):
        kind = vi.type.WhichOneof("value")
        raise UnsupportedOpError(f"input '{vi.name}' is a {kind}; Cuvil imports tensor inputs only")
    tt = vi.type.tensor_type
    dtype = dtype_of(tt.elem_type, f"input '{vi.name}'")
    dims = list(tt.shape.dim) if tt.HasField("shape") else None
    if override is not None:
        if dims is not None and len(dims) != len(override):
            raise CaptureError(
                f"input_shapes gives input '{vi.name}' rank {len(override)}; the model says "
                f"rank {len(dims)}"
            )
        for d, want in zip(dims or [], override):
            if d.HasField("dim_value") and d.dim_value != want:
                raise CaptureError(
                    f"input_shapes gives input '{vi.name}' size {want} where the model fixes "
                    f"{d.dim_value}"
                )
        return TensorType(tuple(override), dtype)
    if dims is None:
        raise CaptureError(
            f"input '{vi.name}' has no shape in the model; give input_shapes={{'{vi.name}': ...}}"
        )
    shape: list[int | str] = []
    for i, d in enumerate(dims):
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            shape.append(sanitize_name(d.dim_param).replace(".", "_"))
        else:
            raise CaptureError(
                f"input '{vi.name}' dim {i} has neither a size nor a name; give "
                f"input_shapes={{'{vi.name}': ...}}"
            )
    return TensorType(tuple(shape), dtype)


def convert_node(
    cx: OnnxContext,
    node: Any,
    env: dict[str, Value],
    opsets: Mapping[str, int],
    table: Mapping[str, Any],
) -> None:
    import onnx
    from onnx import helper

    domain = node.domain or ""
    label = f"'{node.name}'" if node.name else "(unnamed)"
    if domain not in (*DEFAULT_DOMAINS, ML_DOMAIN):
        raise UnsupportedOpError(
            f"ONNX op {domain}::{node.op_type} (node {label}, opset "
            f"{opsets.get(domain, '?')}) is not supported: Cuvil imports the default ai.onnx "
            f"domain and {ML_DOMAIN}"
        )
    ml = domain == ML_DOMAIN
    if ml and ML_DOMAIN not in opsets:
        raise CaptureError(f"node {label} is of domain {ML_DOMAIN}, which the model imports not")
    if not ml and not any(d in opsets for d in DEFAULT_DOMAINS):
        raise CaptureError(f"node {label} is of the default domain, which the model imports not")
    opset = opsets[ML_DOMAIN] if ml else next(opsets[d] for d in DEFAULT_DOMAINS if d in opsets)
    conv = table.get(node.op_type)
    if conv is not None and (conv.domain == ML_DOMAIN) != ml:
        conv = None
    if conv is None:
        raise UnsupportedOpError(
            f"ONNX op {f'{domain}::' if ml else ''}{node.op_type} (node {label}, opset {opset}) "
            f"is not supported by Cuvil ({len(table)} ONNX ops are; docs/onnx-coverage.md lists "
            "them)"
        )
    try:
        version = int(onnx.defs.get_schema(node.op_type, opset, conv.domain).since_version)
    except Exception:
        version = -1
    if not conv.supports(version):
        shown = ", ".join(str(v) for v in conv.versions)
        raise UnsupportedOpError(
            f"ONNX op {node.op_type} (node {label}, opset {opset}) resolves to operator version "
            f"{version}, which Cuvil does not implement (it implements versions {shown})"
        )
    inputs = []
    for name in node.input:
        if name == "":
            inputs.append(None)
        elif name not in env:
            raise CaptureError(
                f"ONNX node {label} ({node.op_type}) reads '{name}', defined by no "
                "earlier node, input or initializer (the graph is not sorted?)"
            )
        else:
            inputs.append(env[name])
    attrs: dict[str, Any] = {}
    subgraphs: dict[str, Any] = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            subgraphs[a.name] = helper.get_attribute_value(a)
        elif a.type in (onnx.AttributeProto.TENSOR,):
            attrs[a.name] = np.array(onnx.numpy_helper.to_array(a.t))
        elif a.ref_attr_name:
            raise UnsupportedOpError(f"node {label}: attribute references are function-only")
        else:
            v = helper.get_attribute_value(a)
            attrs[a.name] = v.decode() if isinstance(v, bytes) else v
    view = OnnxNode(
        node.op_type,
        node.name,
        tuple(inputs),
        attrs,
        len(node.output),
        version,
        opset,
        domain,
        subgraphs,
        tuple(name != "" for name in node.output),
        node,
    )
    cx.node = view
    try:
        result = conv.fn(cx, view)
    except UnsupportedOpError:
        raise
    except CuvilError as exc:
        raise CaptureError(f"while importing {view.describe()}: {exc}") from exc
    except Exception as exc:  # a converter bug must still come out typed and named
        raise CaptureError(
            f"while importing {view.describe()}: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        cx.node = None
    outs = [result] if isinstance(result, Value) else list(result)
    for i, name in enumerate(node.output):
        if name == "":
            continue
        if i >= len(outs) or outs[i] is None:
            raise UnsupportedOpError(
                f"{view.describe()}: output {i} ('{name}') is not supported by Cuvil's converter"
            )
        env[name] = outs[i]  # type: ignore[assignment]


__all__ = ["ONNX_DTYPES", "convert_node", "dtype_of", "import_model", "load_model"]
