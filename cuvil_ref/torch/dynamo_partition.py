"""The Dynamo backend's fallback: run what Cuvil converts on Cuvil and the rest in eager torch.

A graph that does not convert whole is split by ``torch.fx``'s ``CapabilityBasedPartitioner``:
a node is *supported* when Cuvil converts it on its own (a one-node graph captured on tensors
shaped like Dynamo's example values; answers are cached per op and argument signature). Each
maximal supported region becomes one compiled submodule; every other node stays a torch call,
and a ``CuvilFallbackWarning`` names it with its source line.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from cuvil_ref.errors import CuvilError
from cuvil_ref.frontend.source_lines import user_frame
from cuvil_ref.torch.dynamo import CuvilFallbackWarning, GraphRecord, GraphRunner, Plan


def _realize(value: Any) -> Any:
    """A real tensor shaped like a (fake) example value; other values as they are."""
    if isinstance(value, torch.Tensor):
        shape = [int(d) for d in value.shape]
        if value.dtype.is_floating_point:
            return torch.randn(shape, dtype=value.dtype)
        return torch.zeros(shape, dtype=value.dtype)
    if isinstance(value, (tuple, list)):
        return type(value)(_realize(v) for v in value)
    return value


def _example(node: fx.Node) -> Any:
    return node.meta.get("example_value", node.meta.get("val"))


def _label(node: fx.Node) -> str:
    target = node.target
    if node.op == "call_method":
        return f"Tensor.{target}"
    return getattr(target, "__name__", str(target))


class _SingleNode(torch.nn.Module):
    def __init__(self, node: fx.Node) -> None:
        super().__init__()
        self.node = node
        self.inputs = list(node.all_input_nodes)

    def forward(self, *xs: Any) -> Any:
        env = dict(zip(self.inputs, xs))
        args = fx.node.map_arg(self.node.args, lambda n: env[n])
        kwargs = fx.node.map_arg(self.node.kwargs, lambda n: env[n])
        if self.node.op == "call_method":
            return getattr(args[0], str(self.node.target))(*args[1:], **kwargs)
        target: Any = self.node.target  # a call_function node: the callable itself
        return target(*args, **kwargs)


class CuvilSupport(OperatorSupportBase):
    """A node is supported when Cuvil captures it alone (cached by op and signature)."""

    def __init__(self) -> None:
        self.reasons: dict[fx.Node, str] = {}
        self._cache: dict[str, str | None] = {}

    def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
        if node.op not in ("call_function", "call_method"):
            return False
        inputs = node.all_input_nodes
        examples = [_example(n) for n in inputs]
        if any(not isinstance(e, torch.Tensor) for e in examples):
            self.reasons[node] = "takes a non-tensor value computed in the graph"
            return False
        key = repr(
            (
                node.op,
                node.target,
                _signature(node.args),
                _signature(node.kwargs),
                [(tuple(e.shape), e.dtype) for e in examples],
            )
        )
        if key not in self._cache:
            self._cache[key] = self._try(node, examples)
        reason = self._cache[key]
        if reason is not None:
            self.reasons[node] = reason
        return reason is None

    @staticmethod
    def _try(node: fx.Node, examples: list[Any]) -> str | None:
        from cuvil_ref.frontend import torch_to_cuvilir

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch_to_cuvilir(
                    _SingleNode(node).eval(),
                    example_inputs=tuple(_realize(e) for e in examples),
                    capture="export",
                )
        except CuvilError as exc:
            return _reason(str(exc))
        except Exception as exc:  # torch could not even run it on these examples
            return f"{type(exc).__name__}: {str(exc)[:200]}"
        return None


def _reason(message: str) -> str:
    """The gist of a capture error on a one-node graph (its location is the trial's, not the
    user's: the caller adds the user's line)."""
    first = message.splitlines()[0]
    if first.startswith("'aten.") and "is not supported" in first:
        return f"Cuvil has no conversion for {first.split(chr(39))[1]}"
    if "): " in first:
        first = first.split("): ", 1)[1]
    return first[:300]


def _signature(obj: Any) -> Any:
    if isinstance(obj, fx.Node):
        return "node"
    if isinstance(obj, (tuple, list)):
        return tuple(_signature(o) for o in obj)
    if isinstance(obj, dict):
        return tuple(sorted((k, _signature(v)) for k, v in obj.items()))
    return repr(obj)


class _CompiledPart(torch.nn.Module):
    def __init__(self, runner: GraphRunner) -> None:
        super().__init__()
        self.runner = runner

    def forward(self, *args: Any) -> Any:
        out = self.runner(*args)
        return out[0] if self.runner.single else tuple(out)


def partitioned(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    opts: dict[str, Any],
    record: GraphRecord,
    cause: CuvilError,
    plan: Plan | None,
) -> Callable[..., Any]:
    """Compile ``gm``'s supported regions with Cuvil; the rest stays torch. ``example_inputs``
    are the first call's real arguments; ``plan`` the placeholders' roles (or None)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    real = dict(zip(placeholders, example_inputs))
    roles = dict(zip(placeholders, plan)) if plan is not None else {}
    support = CuvilSupport()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    # (fusing rebuilds the graph with new nodes: record the eager ones first)
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method") and node in support.reasons:
            line = user_frame(node.meta.get("stack_trace"))
            where = line.describe() if line else "source line unknown"
            record.eager.append(
                {"op": _label(node), "line": where, "reason": support.reasons[node]}
            )
            warnings.warn(
                f"Cuvil runs '{_label(node)}' ({where}) in eager torch: {support.reasons[node]}",
                CuvilFallbackWarning,
                stacklevel=2,
            )
    fused = partitioner.fuse_partitions(partitions)
    on_cuvil: dict[str, int] = {}
    compiled = 0
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith("fused_"):
            continue
        sub = fused.get_submodule(str(node.target))
        assert isinstance(sub, fx.GraphModule)  # the fuser makes every fused_ part one
        runner = _compile_part(sub, node, opts, record, real, roles)
        if runner is None:
            continue
        setattr(fused, str(node.target), _CompiledPart(runner))
        compiled += 1
        for op, n in record.on_cuvil.items():
            on_cuvil[op] = on_cuvil.get(op, 0) + n
    record.on_cuvil, record.partitions = on_cuvil, compiled
    if not record.eager:
        record.eager.append({"op": "(graph)", "line": "", "reason": str(cause)[:300]})
    fused.recompile()
    return fused.forward


def _compile_part(
    sub: fx.GraphModule,
    call: fx.Node,
    opts: dict[str, Any],
    record: GraphRecord,
    real: dict[fx.Node, Any],
    roles: dict[fx.Node, tuple[str, Any]],
) -> GraphRunner | None:
    """A runner for one fused region, or None to leave it in torch (it failed to compile)."""
    outputs = next(n for n in sub.graph.nodes if n.op == "output")
    single = not isinstance(outputs.args[0], (tuple, list))
    if single:
        outputs.args = ((outputs.args[0],),)
        sub.recompile()
    # A region's inputs are nodes of the parent graph: the graph's weights stay weights, other
    # tensors are inputs; graph inputs have their real values, intermediates stand-ins.
    plan: Plan = []
    examples = []
    n_weights = n_tensors = 0
    for parent in call.args:
        if not isinstance(parent, fx.Node):
            return None
        role = roles.get(parent, ("input", None))[0]
        value = real[parent] if parent in real else _realize(_example(parent))
        if role == "weight":
            plan.append(("weight", n_weights))
            n_weights += 1
        elif role == "input" and isinstance(value, torch.Tensor):
            plan.append(("input", n_tensors))
            n_tensors += 1
        else:
            return None  # a size or another non-tensor value: leave the region in torch
        examples.append(value)
    try:
        runner = GraphRunner(
            sub, examples, opts, GraphRecord(-1, 0), plan, [{} for _ in range(n_tensors)]
        )
    except CuvilError:
        return None
    record.on_cuvil = runner.record.on_cuvil
    runner.single = single
    return runner


__all__ = ["CuvilSupport", "partitioned"]
