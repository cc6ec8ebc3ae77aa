"""``torch.compile(model, backend="cuvil", options={...})``: Cuvil as a TorchDynamo backend.

Registered through the ``torch_dynamo_backends`` entry point, so installing ``cuvil-ref`` is
enough. Dynamo hands over one FX graph per region between graph breaks (a ``print``, a
data-dependent branch...); ``cuvil_backend`` compiles each with ``cuvil_ref.torch.compile``:

* the graph's parameter and buffer placeholders become the compiled graph's weights (a call whose
  weights were modified in place -- or replaced -- recompiles), size placeholders (``s0``: the
  dynamic sizes of ``dynamic=True``) are read from the tensors they come from, so they become
  Cuvil symbolic dims;
* a graph Cuvil cannot convert whole is partitioned (``torch.fx``'s capability partitioner): the
  supported regions run on Cuvil, the rest runs in eager torch, with a ``CuvilFallbackWarning``
  naming the op and the line -- the user's model never fails because of Cuvil;
* ``report()`` says what happened: graphs, graph breaks and their reasons, what ran where.

Options (``options={...}``): ``target``, ``quantize``, ``opt_level``, ``enable_fusion``,
``enable_layout_opt``, ``target_options`` (the target's own options), ``fallback``
(``"eager"``, the default, or ``"error"`` to raise instead of running pieces in torch).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from cuvil_ref.errors import CuvilError

OPTION_NAMES = frozenset(
    {
        "target",
        "quantize",
        "opt_level",
        "enable_fusion",
        "enable_layout_opt",
        "target_options",
        "fallback",
        "cache",
    }
)


class CuvilFallbackWarning(UserWarning):
    """Part of a Dynamo graph runs in eager torch because Cuvil cannot convert it."""


@dataclass
class GraphRecord:
    """What became of one graph Dynamo handed over."""

    index: int
    nodes: int
    on_cuvil: dict[str, int] = field(default_factory=dict)
    eager: list[dict[str, str]] = field(default_factory=list)
    partitions: int = 0
    target: str = "ref"
    recompiles: int = 0


_RECORDS: list[GraphRecord] = []


def report() -> dict[str, Any]:
    """Graphs compiled so far in this process, graph breaks (with Dynamo's reasons) and, per
    graph, the ops that ran on Cuvil and those that ran in eager torch (op, line, reason)."""
    from torch._dynamo.utils import counters

    breaks = dict(counters.get("graph_break", {}))
    return {
        "graphs": len(_RECORDS),
        "graph_breaks": sum(breaks.values()),
        "break_reasons": breaks,
        "per_graph": [vars(r) for r in _RECORDS],
    }


def reset() -> None:
    """Forget the records and Dynamo's graph-break counters (``torch._dynamo.reset()`` forgets
    Dynamo's compiled code; it keeps the counters)."""
    from torch._dynamo.utils import counters

    _RECORDS.clear()
    counters["graph_break"].clear()


def _options(options: dict[str, Any] | None) -> dict[str, Any]:
    opts = dict(options or {})
    unknown = sorted(set(opts) - OPTION_NAMES)
    if unknown:
        raise CuvilError(
            f"torch.compile(backend='cuvil'): unknown option(s) {unknown}; accepted: "
            f"{sorted(OPTION_NAMES)}"
        )
    if opts.get("fallback", "eager") not in ("eager", "error"):
        raise CuvilError("option fallback must be 'eager' or 'error'")
    return opts


def _is_weight(node: fx.Node) -> bool:
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = source.name if source is not None and hasattr(source, "name") else ""
    return "._parameters[" in name or "._buffers[" in name


def _size_source(node: fx.Node, tensor_sources: dict[str, int]) -> tuple[int, int] | None:
    """(tensor input index, axis) for a size placeholder ``L['x'].size()[0]``."""
    source = getattr(node.meta.get("grapharg"), "source", None)
    base, idx = getattr(source, "base", None), getattr(source, "idx", None)
    prop = getattr(getattr(source, "prop", None), "name", "")
    if base is None or idx is None or prop.upper() != "SIZE":
        return None
    j = tensor_sources.get(getattr(base, "name", ""))
    return None if j is None else (j, int(idx))


class _Wrapped(torch.nn.Module):
    """The graph as a module taking its tensor inputs only: weights are its own parameters (so
    capture makes them constants), size arguments are read from the tensors' shapes."""

    def __init__(self, gm: fx.GraphModule, plan: list[tuple[str, Any]], weights: list[Any]):
        super().__init__()
        self.gm = gm
        self.plan = plan
        for i, w in enumerate(weights):
            self.register_buffer(f"w{i}", w.detach(), persistent=False)

    def forward(self, *tensors: torch.Tensor) -> Any:
        args: list[Any] = []
        for kind, ref in self.plan:
            if kind == "weight":
                args.append(getattr(self, f"w{ref}"))
            elif kind == "size":
                args.append(tensors[ref[0]].shape[ref[1]])
            else:
                args.append(tensors[ref])
        return self.gm(*args)


Plan = list[tuple[str, Any]]  # per placeholder: ("weight", k) | ("input", j) | ("size", (j, axis))


def analyze(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> tuple[Plan, list[dict]]:
    """Each placeholder's role, read from Dynamo's ``grapharg`` metadata (Dynamo drops it once
    the backend returns, so this runs inside the backend), and the dynamic dims per tensor
    input (``{axis: symbol}``) implied by the size placeholders."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    sources: dict[str, int] = {}
    plan: Plan = []
    n_weights = n_tensors = 0
    pending = []
    for node, ex in zip(placeholders, example_inputs):
        if isinstance(ex, torch.Tensor) and _is_weight(node):
            plan.append(("weight", n_weights))
            n_weights += 1
        elif isinstance(ex, torch.Tensor):
            source = getattr(node.meta.get("grapharg"), "source", None)
            sources[getattr(source, "name", node.name)] = n_tensors
            plan.append(("input", n_tensors))
            n_tensors += 1
        else:
            plan.append(("pending", node))
            pending.append(len(plan) - 1)
    dynamic: list[dict[int, str]] = [{} for _ in range(n_tensors)]
    for i in pending:
        node = plan[i][1]
        where = _size_source(node, sources)
        if where is None:
            raise CuvilError(
                f"graph input '{node.name}' is a {type(example_inputs[i]).__name__}, not a "
                "tensor or a tensor's size"
            )
        plan[i] = ("size", where)
        dynamic[where[0]][where[1]] = node.name if node.name.isidentifier() else f"s{i}"
    return plan, dynamic


def split_args(plan: Plan, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(weights, tensor inputs) of one call, in plan order."""
    weights = [a for (kind, _), a in zip(plan, args) if kind == "weight"]
    tensors = [a for (kind, _), a in zip(plan, args) if kind == "input"]
    return weights, tensors


def cuvil_backend(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    options: dict[str, Any] | None = None,
    **_: Any,
) -> Callable[..., Any]:
    """The Dynamo backend: compile ``gm`` with Cuvil (wholly, or its supported regions).

    Compilation happens on the graph's first call, with that call's real arguments: inside the
    backend Dynamo's tracing context is live, and a nested torch.export would add its guards to
    the user's frame."""
    opts = _options(options)
    record = GraphRecord(len(_RECORDS), sum(1 for n in gm.graph.nodes if n.op != "placeholder"))
    record.target = str(opts.get("target", "ref"))
    _RECORDS.append(record)
    analysis: Any
    try:
        analysis = analyze(gm, example_inputs)
    except CuvilError as exc:
        analysis = exc
    return _LazyGraph(gm, opts, record, analysis)


class _LazyGraph:
    def __init__(
        self,
        gm: fx.GraphModule,
        opts: dict[str, Any],
        record: GraphRecord,
        analysis: tuple[Plan, list[dict]] | CuvilError,
    ) -> None:
        self.gm, self.opts, self.record, self.analysis = gm, opts, record, analysis
        self.fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self.fn is None:
            try:
                if isinstance(self.analysis, CuvilError):
                    raise self.analysis
                plan, dynamic = self.analysis
                self.fn = GraphRunner(self.gm, args, self.opts, self.record, plan, dynamic)
            except CuvilError as exc:
                if self.opts.get("fallback", "eager") == "error":
                    raise
                from cuvil_ref.torch.dynamo_partition import partitioned

                known = None if isinstance(self.analysis, CuvilError) else self.analysis[0]
                self.fn = partitioned(self.gm, args, self.opts, self.record, exc, known)
        return self.fn(*args)


class GraphRunner:
    """Calls one compiled graph; recompiles when its weights changed in place."""

    def __init__(
        self,
        gm: fx.GraphModule,
        args: Sequence[Any],
        opts: dict[str, Any],
        record: GraphRecord,
        plan: Plan,
        dynamic: list[dict[int, str]],
    ) -> None:
        self.gm, self.opts, self.record = gm, opts, record
        self.plan, self.dynamic = plan, dynamic
        self.single = False
        weights, tensors = split_args(plan, args)
        self._compile(weights, tensors)

    def _key(self, tensors: Sequence[Any]) -> Any:
        """Compiled programs are per input signature unless the graph has symbolic dims."""
        if any(self.dynamic):
            return None
        return tuple((tuple(t.shape), t.dtype) for t in tensors)

    def _compile(self, weights: list[Any], tensors: list[Any]) -> None:
        from cuvil_ref.torch import compile as cuvil_compile

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cm = cuvil_compile(
                _Wrapped(self.gm, self.plan, weights).eval(),
                target=self.opts.get("target", "ref"),
                quantize=self.opts.get("quantize"),
                opt_level=self.opts.get("opt_level", 2),
                enable_fusion=self.opts.get("enable_fusion", True),
                enable_layout_opt=self.opts.get("enable_layout_opt", True),
                options=self.opts.get("target_options"),
                example_inputs=tuple(tensors),
                dynamic_dims=self.dynamic if any(self.dynamic) else None,
                cache=self.opts.get("cache"),
            )
        if not hasattr(self, "programs") or self.weights_changed(weights):
            self.programs: dict[Any, Any] = {}
        self.programs[self._key(tensors)] = cm
        self.versions = [(w.data_ptr(), w._version) for w in weights]
        ops: dict[str, int] = {}
        for node in cm.module.graph.nodes:
            ops[node.op] = ops.get(node.op, 0) + 1
        self.record.on_cuvil = ops
        self.record.partitions = 1

    def weights_changed(self, weights: Sequence[Any]) -> bool:
        return [(w.data_ptr(), w._version) for w in weights] != getattr(self, "versions", None)

    def __call__(self, *args: Any) -> Any:
        weights, tensors = split_args(self.plan, args)
        key = self._key(tensors)
        if self.weights_changed(weights) or key not in self.programs:
            self.record.recompiles += 1
            self._compile(weights, tensors)
        out = self.programs[key](*tensors)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)


__all__ = ["CuvilFallbackWarning", "cuvil_backend", "report", "reset"]
