"""Capture with ``torch.fx.symbolic_trace``: walk the fx graph and convert each node via the table.

Modules whose class is in ``MODULE_TABLE`` stay leaves (one ``call_module`` node each); all other
modules, ``nn.Sequential`` and user blocks included, are traced through. Data-dependent Python
control flow makes fx fail: that error names the line and suggests ``capture='export'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx

from cuvil_ref.errors import CaptureError, CuvilError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.errors import Location, exception_source, located, unsupported
from cuvil_ref.frontend.op_table import FUNCTION_TABLE, METHOD_TABLE, MODULE_TABLE, supported_names
from cuvil_ref.frontend.shared_weights import SharedWeights
from cuvil_ref.frontend.source_lines import user_frame
from cuvil_ref.ir.graph import Value
from cuvil_ref.ir.types import TensorType


class CuvilTracer(torch.fx.Tracer):
    """Records stack traces (for source lines) and keeps only table-mapped modules as leaves."""

    record_stack_traces = True

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return type(m) in MODULE_TABLE


_RANDOM = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "uniform_",
        "normal_",
        "exponential_",
    }
)


class _NoRandom(torch.overrides.TorchFunctionMode):
    """torch.fx runs calls without tensor arguments at trace time and bakes their results into
    the graph; for a random call that would be a silent wrong answer, so it is refused."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in _RANDOM:
            raise CaptureError(
                f"torch.{name} draws random numbers on every call; an inference graph is "
                "deterministic (call model.eval(), and pass random tensors as inputs)"
            )
        return func(*args, **(kwargs or {}))


def trace(model: torch.nn.Module) -> torch.fx.Graph:
    """Symbolically trace ``model``; failures become CaptureError naming the user's line."""
    try:
        with _NoRandom():
            return CuvilTracer().trace(model)
    except CaptureError:
        raise
    except Exception as exc:
        src = exception_source(exc)
        where = f" at {src.describe()}" if src else ""
        raise CaptureError(
            f"torch.fx could not trace {type(model).__name__}{where}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}. This usually means Python control "
            "flow depends on tensor values or shapes; use capture='export' (torch.export), or "
            "make the branch static"
        ) from exc


def _location(node: torch.fx.Node) -> Location:
    path = None
    if node.op == "call_module":
        path = str(node.target)
    else:
        stack = node.meta.get("nn_module_stack")
        if stack:
            path = list(stack.values())[-1][0]
    return Location(node.name, path, user_frame(node.meta.get("stack_trace") or node.stack_trace))


def _target_name(node: torch.fx.Node, model: torch.nn.Module) -> str:
    if node.op == "call_module":
        return f"{type(model.get_submodule(str(node.target))).__qualname__} (nn.Module)"
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    t = node.target
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", str(t))
    return f"{mod}.{name}" if mod else name


def _fetch_attr(model: torch.nn.Module, path: str) -> Any:
    obj: Any = model
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def capture_fx(
    model: torch.nn.Module,
    input_types: Sequence[TensorType],
    names: Sequence[str] | None = None,
    shared: SharedWeights | None = None,
) -> tuple[Converter, list[Value], Any]:
    """Convert ``model``; returns the converter, the input values and the outputs as (leaves,
    torch TreeSpec) of the structure the model returns. ``shared``: see ``Converter.shared``."""
    graph = trace(model)
    cx = Converter(shared=shared)
    env: dict[torch.fx.Node, Any] = {}
    inputs: list[Value] = []
    result: Any = None
    known = supported_names()
    by_name = dict(zip(names or (), input_types))
    placed: dict[str, Value] = {}
    for node in graph.nodes:
        where = _location(node)
        cx.provenance, cx.node_name = where.provenance(), node.name
        if node.op == "placeholder":
            if names is not None and str(node.target) in by_name:
                value = cx.builder.input(node.name, by_name[str(node.target)])
                placed[str(node.target)] = value
                env[node] = value
            elif names is None and len(inputs) < len(input_types):
                value = cx.builder.input(node.name, input_types[len(inputs)])
                inputs.append(value)
                env[node] = value
            elif node.args:
                env[node] = node.args[0]  # a default argument, e.g. mask=None
            else:
                raise CaptureError(
                    f"the model's forward takes more inputs than the {len(input_types)} given "
                    f"(missing '{node.name}'); pass one example input or shape per argument"
                )
            continue
        if node.op == "output":
            result = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
            break
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        if node.op == "get_attr":
            env[node] = cx.weight(str(node.target), _fetch_attr(model, str(node.target)))
            continue
        target = _target_name(node, model)
        if node.op == "call_module":
            module = model.get_submodule(str(node.target))
            convert = MODULE_TABLE.get(type(module))
            if convert is None:
                raise unsupported(target, where, known)
            call = (convert, (cx, module, str(node.target), *args))
        else:
            table = METHOD_TABLE if node.op == "call_method" else FUNCTION_TABLE
            convert = table.get(node.target)
            if convert is None:
                raise unsupported(target, where, known)
            call = (convert, (cx, *args))
        try:
            env[node] = call[0](*call[1], **kwargs)
        except CuvilError as exc:
            raise located(exc, target, where) from exc
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise located(
                CaptureError(f"unsupported arguments: {type(exc).__name__}: {exc}"), target, where
            ) from exc
        if node.op == "call_method" and str(node.target).endswith("_") and node.args:
            first = node.args[0]
            if isinstance(first, torch.fx.Node):
                env[first] = env[node]  # in-place method: later reads see the new value
    from torch.utils import _pytree as pytree

    if names is not None:
        missing = [n for n in names if n not in placed]
        if missing:
            raise CaptureError(f"torch.fx found no forward parameter for inputs {missing}")
        inputs = [placed[n] for n in names]
    return cx, inputs, pytree.tree_flatten(result)
