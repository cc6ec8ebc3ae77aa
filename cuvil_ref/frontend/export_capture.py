"""Capture with ``torch.export``: decompose to a closed vocabulary, convert via ``ATEN_TABLE``.

The exported program is lowered with ``decompositions.decomposition_table()``: Core ATen plus the
high-level ops Cuvil has natively (``linear``, ``layer_norm``, ``scaled_dot_product_attention``...),
which stay one node per layer. Export's runtime assertions are dropped. Parameters and buffers
arrive as placeholders; the graph signature names their parameter paths, which become the
constants' names. Dynamic dims use ``Dim``.

Every converted node is checked against the dtype and static shape torch itself computed for it
(``node.meta["val"]``): a converter that disagrees with torch raises instead of producing a
silently wrong graph.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import Dim, ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree

from cuvil_ref.errors import CaptureError, CuvilError
from cuvil_ref.frontend.context import Converter, dtype_from_torch
from cuvil_ref.frontend.decompositions import NO_OPS, decomposition_table
from cuvil_ref.frontend.errors import Location, exception_source, located, unsupported
from cuvil_ref.frontend.op_table import ATEN_TABLE, FUNCTION_TABLE, supported_names
from cuvil_ref.frontend.source_lines import user_frame
from cuvil_ref.ir.graph import Value
from cuvil_ref.ir.types import TensorType


def _widen(x: torch.Tensor, axes: Sequence[int]) -> torch.Tensor:
    """Give each dynamic axis a size >= 2: torch.export specializes sizes 0 and 1."""
    for a in axes:
        if x.shape[a] < 2:
            reps = [1] * x.dim()
            reps[a] = 2 if x.shape[a] == 1 else 0
            x = x.repeat(*reps) if x.shape[a] == 1 else torch.zeros_like(x).narrow(a, 0, 0)
    return x


def export(
    model: torch.nn.Module, example: Sequence[torch.Tensor], dynamic: Sequence[Mapping[int, str]]
) -> ExportedProgram:
    """Run torch.export with a ``Dim`` per symbol name; failures become CaptureError."""
    dims: dict[str, Any] = {}
    shapes = []
    args = []
    for x, dyn in zip(example, dynamic):
        shapes.append({a: dims.setdefault(n, Dim(n)) for a, n in dyn.items()} if dyn else None)
        args.append(_widen(x, list(dyn)) if dyn else x)
    try:
        ep = torch.export.export(
            model, tuple(args), dynamic_shapes=tuple(shapes) if any(dynamic) else None
        )
    except Exception as exc:
        src = exception_source(exc)
        where = f" at {src.describe()}" if src else ""
        lines = [ln for ln in str(exc).splitlines() if ln.strip()][:6]
        raise CaptureError(
            f"torch.export could not export {type(model).__name__}{where}: "
            f"{type(exc).__name__}: {' '.join(lines)}. Make the failing code traceable "
            "(no data-dependent Python branches; for dynamic dims, no code that fixes their "
            "size), or try capture='fx'"
        ) from exc
    return decompose(ep, type(model).__name__)


def decompose(ep: ExportedProgram, what: str = "the program") -> ExportedProgram:
    """Lower ``ep`` to Core ATen plus Cuvil's preserved ops (see ``decompositions.py``)."""
    try:
        return ep.run_decompositions(decomposition_table())
    except Exception as exc:
        src = exception_source(exc)
        where = f" at {src.describe()}" if src else ""
        lines = [ln for ln in str(exc).splitlines() if ln.strip()][:4]
        raise CaptureError(
            f"torch could not decompose {what} to Core ATen{where}: {type(exc).__name__}: "
            f"{' '.join(lines)}; try capture='fx'"
        ) from exc


def _location(node: torch.fx.Node) -> Location:
    stack = node.meta.get("nn_module_stack")
    path = list(stack.values())[-1][0] if stack else None
    return Location(node.name, path or None, user_frame(node.meta.get("stack_trace")))


def _aten_name(target: Any) -> str | None:
    schema = getattr(target, "_schema", None)
    return schema.name if schema is not None else None


def convert_program(
    ep: ExportedProgram, input_types: Sequence[TensorType]
) -> tuple[Converter, list[Value], Any]:
    """Convert an ExportedProgram; returns the converter, input values and output structure."""
    cx = Converter()
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")}
    env: dict[torch.fx.Node, Any] = {}
    inputs: list[Value] = []
    known = supported_names()
    outputs: list[Any] = []
    for node in ep.graph.nodes:
        where = _location(node)
        cx.provenance, cx.node_name = where.provenance(), node.name
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is None or spec.kind == InputKind.USER_INPUT:
                if len(inputs) >= len(input_types):
                    raise CaptureError(
                        f"the exported program has more inputs than given ('{node.name}')"
                    )
                value = cx.builder.input(node.name, input_types[len(inputs)])
                inputs.append(value)
                env[node] = value
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                env[node] = cx.weight(
                    spec.target,
                    ep.state_dict[spec.target]
                    if spec.target in ep.state_dict
                    else ep.constants[spec.target],
                )
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                env[node] = cx.weight(spec.target, ep.constants[spec.target])
            else:
                raise CaptureError(
                    f"exported input '{node.name}' of kind {spec.kind.name} is not supported"
                )
            continue
        if node.op == "output":
            outputs = [env[n] if isinstance(n, torch.fx.Node) else n for n in node.args[0]]
            break
        if node.op != "call_function":
            raise unsupported(f"{node.op} {node.target}", where, known)
        name = _aten_name(node.target)
        if name in NO_OPS:
            env[node] = None
            continue
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        cx.expected = node.meta.get("val")
        cx.used_outputs = _used_outputs(node)
        if name is not None:
            convert = ATEN_TABLE.get(name)
            label = str(node.target)
        else:
            convert = (
                FUNCTION_TABLE.get(node.target)
                if node.target
                in (
                    operator.getitem,
                    operator.add,
                    operator.sub,
                    operator.mul,
                    operator.floordiv,
                    operator.truediv,
                    operator.neg,
                )
                else None
            )
            label = getattr(node.target, "__name__", str(node.target))
        if convert is None:
            raise unsupported(label, where, known)
        try:
            env[node] = convert(cx, *args, **kwargs)
            check_against_torch(env[node], cx.expected)
        except CuvilError as exc:
            raise located(exc, label, where) from exc
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise located(
                CaptureError(f"unsupported arguments: {type(exc).__name__}: {exc}"), label, where
            ) from exc
        if name is not None and name.endswith("_") and node.args:
            first = node.args[0]
            if isinstance(first, torch.fx.Node):
                env[first] = env[node]  # in-place ATen op: later reads see the new value
    # Mutated buffers and inputs come first among the graph's outputs: keep the user's only.
    kinds = [spec.kind for spec in ep.graph_signature.output_specs]
    user_outputs = [o for o, kind in zip(outputs, kinds) if kind == OutputKind.USER_OUTPUT]
    spec = ep.call_spec.out_spec
    structure = pytree.tree_unflatten(user_outputs, spec) if spec is not None else user_outputs
    return cx, inputs, structure


def _used_outputs(node: torch.fx.Node) -> frozenset[int] | None:
    """The output indices of ``node`` that its users read, if all read them via ``getitem``."""
    used = set()
    for user in node.users:
        if user.target is not operator.getitem or not isinstance(user.args[1], int):
            return None
        used.add(user.args[1])
    return frozenset(used)


def check_against_torch(result: Any, expected: Any) -> None:
    """Raise if a converted node's dtype or static shape differs from what torch computed.

    ``expected`` is the node's ``meta["val"]`` (a FakeTensor, a tuple of them, or a SymInt/None
    for size arithmetic). Symbolic dims are not compared; everything static must agree.
    """
    if expected is None:
        return
    if isinstance(expected, (tuple, list)):
        if isinstance(result, (tuple, list)):
            for r, e in zip(result, expected):
                check_against_torch(r, e)
        return
    if not isinstance(expected, torch.Tensor) or not isinstance(result, Value):
        return
    got = result.type
    want_dtype = dtype_from_torch(expected.dtype)
    want_shape = tuple(expected.shape)
    bad = got.dtype != want_dtype or len(got.shape) != len(want_shape)
    for g, w in zip(got.shape, want_shape):
        if isinstance(g, int) and isinstance(w, int) and g != w:
            bad = True
    if bad:
        shown = ", ".join(str(d) for d in want_shape)
        raise CaptureError(
            f"Cuvil's conversion gives {got} but torch computes {want_dtype.value}[{shown}]; "
            "this is a Cuvil frontend bug -- please report it with the model"
        )


def capture_export(
    model: torch.nn.Module,
    example: Sequence[torch.Tensor],
    input_types: Sequence[TensorType],
    dynamic: Sequence[Mapping[int, str]],
) -> tuple[Converter, list[Value], Any]:
    return convert_program(export(model, example, dynamic), input_types)
