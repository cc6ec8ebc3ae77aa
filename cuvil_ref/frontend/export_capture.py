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

import contextlib
import functools
import operator
import warnings
from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.export import Dim, ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree

from cuvil_ref.errors import CaptureError, CuvilError, TorchExportError, UnsupportedOpError
from cuvil_ref.frontend.aten import HIGHER_ORDER_TABLE
from cuvil_ref.frontend.aten.coverage import EXCLUDED
from cuvil_ref.frontend.capture_fold import CaptureFolder
from cuvil_ref.frontend.context import Converter, dtype_from_torch
from cuvil_ref.frontend.decompositions import NO_OPS, decomposition_table, needs_decomposition
from cuvil_ref.frontend.errors import Location, exception_source, located, unsupported
from cuvil_ref.frontend.lazy_stack_lines import lazy_stack_lines
from cuvil_ref.frontend.op_table import ATEN_TABLE, FUNCTION_TABLE, supported_names
from cuvil_ref.frontend.shared_weights import SharedWeights
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
    model: torch.nn.Module,
    example: Sequence[torch.Tensor],
    dynamic: Sequence[Mapping[int, str]],
    kwargs: Sequence[torch.Tensor] = (),
    names: Sequence[str] | None = None,
) -> ExportedProgram:
    """Run torch.export with a ``Dim`` per symbol name; failures become CaptureError.

    ``example`` are the positional inputs, ``kwargs`` the keyword inputs (their parameter names
    are the last ``len(kwargs)`` of ``names``); ``dynamic`` has one entry per input, in order.
    """
    shapes: list[Any] = []
    tensors: list[torch.Tensor] = []
    for x, dyn in zip([*example, *kwargs], dynamic):
        # Dim.DYNAMIC lets torch infer each size's valid range (a sequence length bounded by the
        # position table, say); Cuvil's own symbol names are put back on the IR types, and the
        # ranges are read back into ``dim_ranges``.
        shapes.append({a: Dim.DYNAMIC for a in dyn} if dyn else None)
        tensors.append(_widen(x, list(dyn)) if dyn else x)
    args = tuple(tensors[: len(example)])
    kw_names = list(names[len(example) :]) if names is not None else []
    kw = dict(zip(kw_names, tensors[len(example) :]))
    dynamic_shapes: Any = None
    if any(dynamic):
        dynamic_shapes = (
            dict(zip(names, shapes)) if names is not None else _positional_shapes(model, shapes)
        )
    try:
        with _lean_export():
            ep = torch.export.export(model, args, kwargs=kw or None, dynamic_shapes=dynamic_shapes)
    except Exception as exc:
        src = exception_source(exc)
        where = f" at {src.describe()}" if src else ""
        lines = [ln for ln in str(exc).splitlines() if ln.strip()][:6]
        raise TorchExportError(
            f"torch.export could not export {type(model).__name__}{where}: "
            f"{type(exc).__name__}: {' '.join(lines)}. Make the failing code traceable "
            "(no data-dependent Python branches; for dynamic dims, no code that fixes their "
            "size), or try capture='fx'"
        ) from exc
    if not needs_decomposition(ep.graph, _core_names()):
        return ep
    return decompose(ep, type(model).__name__)


@contextlib.contextmanager
def _lean_export() -> Iterator[None]:
    """torch.export doing less work that Cuvil never reads: recorded stack traces read their
    source lines lazily (``lazy_stack_lines``), and the GraphModules its passes build regenerate
    their Python code only when called (torch.fx's lazy graph modules, which Dynamo uses too;
    export's passes recompile the graph six times). The graph is the same either way."""
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module
    except ImportError:  # pragma: no cover - another torch: plain GraphModules
        lazy_modules: Any = contextlib.nullcontext()
    else:
        lazy_modules = _use_lazy_graph_module(True)
    with lazy_stack_lines(), lazy_modules:
        yield


@functools.lru_cache(maxsize=1)
def _core_names() -> Container[str]:
    return _CoreAten()


class _CoreAten:
    """Whether an op name (``aten::cos``) is in the Core ATen opset, decided per name on first
    use: the same answer as ``coverage.core_aten_ops()``, without listing the whole opset (which
    costs about 0.1 s; a graph holds a few dozen distinct ops)."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name not in self._known:
            self._known[name] = _is_core(name)
        return self._known[name]


def _is_core(name: str) -> bool:
    namespace, _, base = name.partition("::")
    if namespace != "aten" or not base:
        return False
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return False
    for overload in packet.overloads():
        op = getattr(packet, overload, None)
        if op is not None and torch.Tag.core in op.tags:
            return True
    return False


def _positional_shapes(model: torch.nn.Module, shapes: list[Any]) -> tuple[Any, ...]:
    """``dynamic_shapes`` for positional inputs: one entry per parameter, the inputs bound to a
    ``*args`` parameter grouped into one tuple (torch.export's structure)."""
    import inspect

    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return tuple(shapes)
    out: list[Any] = []
    rest = list(shapes)
    for p in params:
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            out.append(tuple(rest))
            rest = []
            break
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if not rest:
                break
            out.append(rest.pop(0))
    return tuple(out) + tuple(rest)


def decompose(ep: ExportedProgram, what: str = "the program") -> ExportedProgram:
    """Lower ``ep`` to Core ATen plus Cuvil's preserved ops (see ``decompositions.py``)."""
    try:
        with warnings.catch_warnings(), _lean_export():
            # torch 2.13's own run_decompositions deep-copies TreeSpecs and trips its own
            # LeafSpec deprecation; the user's code has nothing to change.
            warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
            return ep.run_decompositions(decomposition_table())
    except Exception as exc:
        src = exception_source(exc)
        where = f" at {src.describe()}" if src else ""
        lines = [ln for ln in str(exc).splitlines() if ln.strip()][:4]
        raise TorchExportError(
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
    ep: ExportedProgram,
    input_types: Sequence[TensorType],
    names: Sequence[str] | None = None,
    shared: SharedWeights | None = None,
) -> tuple[Converter, list[Value], Any]:
    """Convert an ExportedProgram; returns the converter, the input values and the outputs as
    (leaves, torch TreeSpec). ``shared``: see ``Converter.shared``."""
    cx = Converter(shared=shared)
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")}
    if shared is not None:
        cx.written_storages = frozenset(
            _weight(ep, target).untyped_storage().data_ptr()
            for target in _written_weights(ep, specs)
        )
    scope = ExportScope(cx, ep.graph_module)
    inputs: list[Value] = []
    outputs: list[Any] = []
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is None or spec.kind == InputKind.USER_INPUT:
                if len(inputs) >= len(input_types):
                    raise CaptureError(
                        f"the exported program has more inputs than given ('{node.name}')"
                    )
                value = cx.builder.input(node.name, input_types[len(inputs)])
                _record_ranges(cx, ep, node, value)
                inputs.append(value)
                scope.env[node] = value
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                scope.folder.add_weight(node, spec.target, _weight(ep, spec.target))
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                scope.folder.add_weight(node, spec.target, ep.constants[spec.target])
            else:
                raise CaptureError(
                    f"exported input '{node.name}' of kind {spec.kind.name} is not supported"
                )
            continue
        if node.op == "output":
            outputs = scope.outputs(node)
            break
        scope.convert(node)
    cx.folded = scope.folder.summary()
    # Mutated buffers and inputs come first among the graph's outputs: keep the user's only.
    kinds = [spec.kind for spec in ep.graph_signature.output_specs]
    user_outputs = [o for o, kind in zip(outputs, kinds) if kind == OutputKind.USER_OUTPUT]
    spec = ep.call_spec.out_spec
    if spec is None:
        return cx, inputs, pytree.tree_flatten(user_outputs)
    return cx, inputs, (user_outputs, spec)


def _written_weights(ep: ExportedProgram, specs: Mapping[str, Any]) -> set[str]:
    """The parameters and buffers the program may write in place: those the signature lists as
    mutated, and every one an in-place op's arguments depend on (``embedding_renorm_`` of
    ``detach(weight)``). The model changes them itself when run eagerly, so they are copied
    rather than shared (a shared one would trip the compiled module's change check)."""
    sig = ep.graph_signature
    written = set(sig.buffers_to_mutate.values())
    written |= set(getattr(sig, "parameters_to_mutate", {}).values())
    stack = [a for n in ep.graph.nodes if _writes_in_place(n) for a in n.all_input_nodes]
    seen: set[torch.fx.Node] = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder":
            spec = specs.get(n.name)
            if spec is not None and spec.target:
                written.add(spec.target)
        else:
            stack.extend(n.all_input_nodes)
    return written


def _weight(ep: ExportedProgram, target: str) -> torch.Tensor:
    """A parameter or buffer of the program (non-persistent buffers live in ``constants``)."""
    return ep.state_dict[target] if target in ep.state_dict else ep.constants[target]


def _writes_in_place(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None:
        return False
    return schema.is_mutable or (schema.name.endswith("_") and not schema.name.endswith("__"))


#: Python operators an exported graph may call directly (the rest are ATen ops).
_OPERATORS = (
    operator.getitem,
    operator.add,
    operator.sub,
    operator.mul,
    operator.floordiv,
    operator.truediv,
    operator.neg,
)


class ExportScope:
    """Converts the nodes of one exported fx graph: the program's own graph, or the subgraph of
    a higher-order op (``torch.cond``'s branches, ``torch.while_loop``'s condition and body),
    which becomes a region (``aten/control_flow.py``). ``env`` holds the IR value (or Python
    value) of each converted node, ``folder`` the nodes computed at capture, and ``owner`` is
    the module whose attributes ``get_attr`` nodes name (the subgraphs)."""

    def __init__(self, cx: Converter, owner: torch.nn.Module) -> None:
        self.cx = cx
        self.owner = owner
        self.env: dict[torch.fx.Node, Any] = {}
        self.folder = CaptureFolder(cx)
        self.known = supported_names()

    def lookup(self, n: torch.fx.Node) -> Any:
        if n not in self.env:
            self.env[n] = self.folder.materialize(n)  # a folded value read by a converted node
        return self.env[n]

    def outputs(self, node: torch.fx.Node) -> list[Any]:
        """The values an ``output`` node returns."""
        results = node.args[0]
        results = results if isinstance(results, (tuple, list)) else (results,)
        return [self.lookup(n) if isinstance(n, torch.fx.Node) else n for n in results]

    def convert(self, node: torch.fx.Node) -> None:
        """Convert one ``get_attr`` or ``call_function`` node into ``env``."""
        cx = self.cx
        where = _location(node)
        cx.provenance, cx.node_name = where.provenance(), node.name
        if node.op == "get_attr":  # a higher-order op's subgraph (a GraphModule)
            self.env[node] = _attribute(self.owner, str(node.target))
            return
        if node.op != "call_function":
            raise unsupported(f"{node.op} {node.target}", where, self.known)
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            self.env[node] = self.convert_higher_order(node, where)
            return
        name = _aten_name(node.target)
        if name in NO_OPS:
            self.env[node] = None
            return
        if self.folder.try_fold(node):
            return
        args = torch.fx.node.map_arg(node.args, self.lookup)
        kwargs = torch.fx.node.map_arg(node.kwargs, self.lookup)
        cx.expected = node.meta.get("val")
        cx.used_outputs = _used_outputs(node)
        cx.arg_vals = tuple(
            a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in node.args
        )
        if name is not None:
            convert = ATEN_TABLE.get(name)
            label = str(node.target)
        else:
            convert = FUNCTION_TABLE.get(node.target) if node.target in _OPERATORS else None
            label = getattr(node.target, "__name__", str(node.target))
        if convert is None:
            if name in EXCLUDED:
                raise UnsupportedOpError(
                    f"'{label}' ({where.describe()}) is outside what Cuvil compiles: "
                    f"{EXCLUDED[name]}"
                )
            raise unsupported(label, where, self.known)
        try:
            self.env[node] = convert(cx, *args, **kwargs)
            check_against_torch(self.env[node], cx.expected)
        except CuvilError as exc:
            raise located(exc, label, where) from exc
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise located(
                CaptureError(f"unsupported arguments: {type(exc).__name__}: {exc}"), label, where
            ) from exc
        if name is not None and name.endswith("_") and node.args:
            first = node.args[0]
            if isinstance(first, torch.fx.Node):
                self.env[first] = self.env[node]  # in-place ATen op: later reads see the new value
                self.folder.values.pop(first, None)

    def convert_higher_order(self, node: torch.fx.Node, where: Location) -> Any:
        """``torch.ops.higher_order.<name>`` through ``HIGHER_ORDER_TABLE``."""
        label = f"torch.ops.higher_order.{node.target.name()}"
        convert = HIGHER_ORDER_TABLE.get(node.target.name())
        if convert is None:
            raise unsupported(label, where, self.known)
        self.cx.expected = node.meta.get("val")
        try:
            result = convert(self, node)
            check_against_torch(result, self.cx.expected)
        except CuvilError as exc:
            raise located(exc, label, where) from exc
        return result


def _attribute(owner: torch.nn.Module, target: str) -> Any:
    value: Any = owner
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _record_ranges(cx: Converter, ep: ExportedProgram, node: torch.fx.Node, value: Value) -> None:
    """Put the range torch inferred for each symbolic dim of an input into ``cx.dim_ranges``
    (``{"seq": [2, 64]}``; ``None`` for no upper bound), intersecting repeated names."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return
    for dim, size in zip(value.type.shape, val.shape):
        if not isinstance(dim, str) or not isinstance(size, torch.SymInt):
            continue
        vr = ep.range_constraints.get(size.node.expr)
        if vr is None:
            continue
        lo, hi = _bound(vr.lower) or 0, _bound(vr.upper)
        old = cx.dim_ranges.get(dim)
        if old is not None:
            lo = max(lo, old[0])
            hi = old[1] if hi is None else (hi if old[1] is None else min(hi, old[1]))
        cx.dim_ranges[dim] = [lo, hi]


def _bound(x: Any) -> int | None:
    """A sympy range bound as an int, or None when it is infinite."""
    try:
        return int(x)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


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
    kwargs: Sequence[torch.Tensor],
    input_types: Sequence[TensorType],
    dynamic: Sequence[Mapping[int, str]],
    names: Sequence[str] | None = None,
    shared: SharedWeights | None = None,
) -> tuple[Converter, list[Value], Any]:
    ep = export(model, example, dynamic, kwargs, names)
    return convert_program(ep, input_types, names, shared)
