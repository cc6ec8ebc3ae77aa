"""``torch.cond`` and ``torch.while_loop`` -> the IR's ``if`` and ``while`` ops.

torch.export records them as higher-order ops whose subgraphs are ``get_attr`` GraphModules::

    cond(pred, true_graph, false_graph, operands)
    while_loop(cond_graph, body_graph, carried_inputs, additional_inputs)

Every subgraph takes the operands in order (``while_loop``: carried, then additional) and is
converted into a region by the same machinery as the program itself (an
:class:`~cuvil_ref.frontend.export_capture.ExportScope` around the region's builder), so every
converter, capture folding and the check against torch's own types apply inside it. Operands
that are runtime values become the region's parameters (the op's operands); operands that are
weights, or tensors computed at capture, become constants of the region, so folding and
quantization see the weights inside the region. ``pred`` may be any one-element tensor (it is
compared with zero and reshaped to a ``bool[]``) or a Python bool (a constant: the branch not
taken is removed by constant folding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Value

if TYPE_CHECKING:
    from cuvil_ref.frontend.export_capture import ExportScope

#: A subgraph operand: a runtime value (a region parameter) or (name, tensor) (a constant).
Binding = Value | tuple[str, torch.Tensor]


def bind(scope: ExportScope, args: Any, what: str) -> list[Binding]:
    """The bindings of a higher-order op's operand list."""
    out: list[Binding] = []
    for i, arg in enumerate(args):
        if not isinstance(arg, torch.fx.Node):
            raise CaptureError(
                f"{what} #{i} is {arg!r}, not a tensor; pass tensors to the branches (ints and "
                "other Python values can be closed over instead)"
            )
        known = scope.folder.known(arg)
        if known is not None and arg not in scope.env:
            out.append(known)
            continue
        value = scope.lookup(arg)
        if not isinstance(value, Value):
            raise CaptureError(f"{what} #{i} ('{arg.name}') is not a tensor here ({value!r})")
        array = scope.cx.builder.constant_array(value.name)
        out.append(value if array is None else (value.name, torch.from_numpy(_plain(array))))
    return out


def _plain(array: np.ndarray) -> np.ndarray:
    if array.dtype == DType.bf16.numpy:
        raise CaptureError("a bf16 constant operand of a control-flow op is not supported yet")
    return np.array(array)


def convert_region(scope: ExportScope, module: Any, bindings: list[Binding], hint: str) -> Graph:
    """The region that subgraph ``module`` computes, its placeholders bound to ``bindings``."""
    if not isinstance(module, torch.fx.GraphModule):
        raise CaptureError(
            f"the {hint} of a control-flow op is {type(module).__name__}, not a graph"
        )
    params = [b for b in bindings if isinstance(b, Value)]
    builder = scope.cx.builder.region(
        [v.type for v in params], [f"{hint}_{v.name}" for v in params]
    )
    from cuvil_ref.frontend.export_capture import ExportScope

    inner = ExportScope(Converter(builder), module)
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(bindings):
        raise CaptureError(
            f"the {hint} takes {len(placeholders)} inputs but the op passes {len(bindings)}"
        )
    values = iter(builder.inputs)
    for node, binding in zip(placeholders, bindings, strict=True):
        if isinstance(binding, Value):
            inner.env[node] = next(values)
        else:
            inner.folder.add_weight(node, *binding)
    outputs: list[Any] = []
    for node in module.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            outputs = inner.outputs(node)
            break
        inner.convert(node)
    scope.folder.folded.update(inner.folder.folded)
    for i, out in enumerate(outputs):
        if not isinstance(out, Value):
            raise CaptureError(f"the {hint} returns {out!r} as result #{i}, not a tensor")
    return builder.build(outputs)


def _predicate(cx: Converter, pred: Any) -> Value:
    """``pred`` as a ``bool[]`` scalar."""
    if isinstance(pred, (bool, np.bool_)):
        return cx.constant(np.array(bool(pred)), "pred")
    if not isinstance(pred, Value):
        raise CaptureError(f"the predicate of torch.cond is {pred!r}; pass a bool or a tensor")
    if any(not isinstance(d, int) for d in pred.type.shape) or pred.type.numel() != 1:
        raise CaptureError(
            f"the predicate of torch.cond has shape {list(pred.type.shape)}; it must hold one "
            "element"
        )
    if pred.type.dtype != DType.bool:
        zero = cx.constant(np.zeros((), pred.type.dtype.numpy), "zero")
        pred = cx.op("ne", [pred, zero])
    if pred.type.shape != ():
        pred = cx.op("reshape", [pred], shape=())
    return pred


def cond(scope: ExportScope, node: torch.fx.Node) -> tuple[Value, ...]:
    """``torch.ops.higher_order.cond(pred, true_graph, false_graph, operands)``."""
    pred_arg, true_graph, false_graph, operands = node.args[:4]
    cx = scope.cx
    pred = scope.lookup(pred_arg) if isinstance(pred_arg, torch.fx.Node) else pred_arg
    bindings = bind(scope, operands, "operand")
    then = convert_region(scope, scope.lookup(true_graph), bindings, "then")
    other = convert_region(scope, scope.lookup(false_graph), bindings, "else")
    cx.node_name, cx.provenance = node.name, cx.provenance
    runtime = [b for b in bindings if isinstance(b, Value)]
    return cx.builder.cond(
        _predicate(cx, pred), then, other, runtime, name=node.name, provenance=cx.provenance
    )


def while_loop(scope: ExportScope, node: torch.fx.Node) -> tuple[Value, ...]:
    """``torch.ops.higher_order.while_loop(cond_graph, body_graph, carried, additional)``."""
    cond_graph, body_graph, carried_args, additional_args = node.args[:4]
    cx = scope.cx
    provenance = cx.provenance
    carried: list[Value] = []
    for i, arg in enumerate(carried_args):
        value = scope.lookup(arg) if isinstance(arg, torch.fx.Node) else arg
        if not isinstance(value, Value):
            raise CaptureError(
                f"carried input #{i} of torch.while_loop is {value!r}; carry tensors (a Python "
                "int changes nothing between iterations: close over it instead)"
            )
        carried.append(value)
    extra = bind(scope, additional_args, "additional input")
    bindings: list[Binding] = [*carried, *extra]
    cond_region = convert_region(scope, scope.lookup(cond_graph), bindings, "cond")
    body = convert_region(scope, scope.lookup(body_graph), bindings, "body")
    invariants = [b for b in extra if isinstance(b, Value)]
    return cx.builder.while_loop(
        cond_region, body, carried, invariants, name=node.name, provenance=provenance
    )


TABLE = {"cond": cond, "while_loop": while_loop}
