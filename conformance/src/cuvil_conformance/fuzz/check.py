"""The differential checks a fuzz case must pass.

* **pipeline**: the module compiled for the target through the whole pipeline (passes, memory
  plan, partitioning, the pack's lowering) at each opt_level must agree with the reference
  interpreter on the unoptimized module (opt_level 0). Integer chains must agree bit for bit;
  float chains within a graph bound built from the ops' own tolerance classes (below).
* **torch**: the interpreter must agree with PyTorch eager on the same chain, node by node
  through each op's ``torch_twin`` on the same operands (only chains whose ops all have one).

Float graph bound: ``|got - want| <= 2 * K * eps * max(1, max|want|) + U * ulp(want)`` with K the
sum of the nodes' accumulation lengths (at least 1 each, plus a normalization's condition
number) and U = 8 per node -- the reduction bound of the suite, summed over the chain. NaN must
be where the reference has NaN and infinities must match, as everywhere in the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_conformance.fuzz.graphs import FuzzCase
from cuvil_conformance.generators.points import accumulation_length, conditioning
from cuvil_conformance.tolerance import Rule, compare
from cuvil_ref.interpreter import interpret, run_node
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ops import get_op

OPT_LEVELS = (0, 1, 2, 3)


@dataclass(frozen=True)
class Finding:
    """What went wrong with one case: where (opt level or 'torch'), and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def graph_rule(graph: Graph, integer: bool, inputs: Sequence[np.ndarray] = ()) -> tuple[Rule, int]:
    """(rule, K) for comparing whole-graph outputs. Given the inputs, a normalization's K also
    counts its operand's condition number (``conditioning``), from the reference's values."""
    if integer:
        return Rule("exact"), 0
    env: dict[str, Any] = dict(graph.constants)
    env.update({v.name: a for v, a in zip(graph.inputs, inputs)})
    k = 0
    for node in graph.nodes:
        opdef = get_op(node.op)
        shapes = [tuple(int(d) for d in v.type.shape) for v in node.inputs]
        k += max(1, accumulation_length(opdef, shapes, node.attrs))
        if inputs:
            args = [env[v.name] for v in node.inputs]
            k += conditioning(opdef, args, node.attrs)
            env.update({v.name: o for v, o in zip(node.outputs, run_node(node, args, {}))})
    return Rule("reduction", 8 * max(1, len(graph.nodes))), k


def _compare_all(got: Sequence[Any], want: Sequence[np.ndarray], rule: Rule, k: int) -> str:
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        c = compare(np.asarray(g), np.asarray(w), rule, k)
        if not c.ok:
            return f"output {i}: {c.reason}"
    return ""


def check_pipeline(
    case: FuzzCase, target: str, opt_levels: Sequence[int] = OPT_LEVELS
) -> Finding | None:
    """Compile at every opt_level for ``target`` and compare with the opt_level-0 interpreter."""
    from cuvil_ref.lowering.compiler import compile_module

    try:
        want = interpret(case.module, case.inputs)
    except Exception as exc:  # a generated graph the reference cannot run is a finding too
        return Finding("reference", f"{type(exc).__name__}: {exc}")
    rule, k = graph_rule(case.module.graph, case.integer, case.inputs)
    for level in opt_levels:
        try:
            program = compile_module(case.module, target, opt_level=level, cache=False)
            got = program.run([a.copy() for a in case.inputs])
        except Exception as exc:
            return Finding(f"opt_level {level}", f"{type(exc).__name__}: {exc}")
        problem = _compare_all(got, want, rule, k)
        if problem:
            return Finding(f"opt_level {level}", problem)
    return None


def has_torch_twins(case: FuzzCase) -> bool:
    return all(get_op(n.op).torch_twin is not None for n in case.module.graph.nodes)


#: Inputs on which Cuvil and PyTorch differ by design, as docs/float-semantics.md states: there
#: the node is not compared (the chain goes on with Cuvil's values).
KNOWN_DIFFERENCES: dict[str, Callable[[list[np.ndarray]], bool]] = {
    # gelu(+inf) is +inf in Cuvil; PyTorch's vectorized kernel gives NaN, its scalar one inf
    "gelu": lambda args: bool(np.isposinf(args[0]).any()),
}


def check_torch(case: FuzzCase) -> Finding | None:
    """Each node of the chain against its torch twin, on the same operands (the interpreter's
    values), so a difference is the op's own and is not amplified by the ops after it.

    Integer and bool results must be equal. A float result is judged against the twin run in
    float64 (the truth, as near as torch gets it): the interpreter fails where it is further
    from that than 4x torch's own float32 error plus the op's reduction-style bound
    (``2 * K * eps * max(1, max|want|) + 4 ulp``). Both sides lose digits where a formula is
    ill-conditioned (a normalization over two elements, gelu far below zero); the interpreter
    must not lose markedly more than PyTorch eager, nor compute something else.
    """
    import torch

    graph = case.module.graph
    env: dict[str, np.ndarray] = dict(graph.constants)
    env.update({v.name: a for v, a in zip(graph.inputs, case.inputs)})
    for node in graph.nodes:
        args = [env[v.name] for v in node.inputs]
        try:
            got = list(run_node(node, args, {}))
        except Exception as exc:
            return Finding("reference", f"{node.op}: {type(exc).__name__}: {exc}")
        try:
            t32 = _twin(torch, node, args, wide=False)
        except Exception as exc:  # torch rejects what Cuvil accepts: not a wrong answer
            if _torch_rejects(exc):
                return None
            return Finding("torch", f"{node.op}: {type(exc).__name__}: {exc}")
        documented = KNOWN_DIFFERENCES.get(node.op)
        problem = None if documented and documented(args) else _judge(torch, node, args, got, t32)
        if problem:
            return Finding("torch", f"{node.op} {dict(node.attrs)}: {problem}")
        env.update({v.name: o for v, o in zip(node.outputs, got)})
    return None


def _twin(torch: Any, node: Any, args: list[np.ndarray], wide: bool) -> list[np.ndarray]:
    twin = get_op(node.op).torch_twin
    assert twin is not None
    # np.array, not ascontiguousarray: that one turns a 0-d array into a 1-d one
    tensors = [
        torch.from_numpy(np.array(a, dtype=np.float64 if wide and a.dtype.kind == "f" else None))
        for a in args
    ]
    out = twin(torch, *tensors, **dict(node.attrs))
    return [
        np.asarray(o.detach().numpy()) for o in (out if isinstance(out, (tuple, list)) else [out])
    ]


def _judge(
    torch: Any, node: Any, args: list[np.ndarray], got: list[np.ndarray], t32: list[np.ndarray]
) -> str:
    if len(got) != len(t32):
        return f"{len(got)} outputs, torch gives {len(t32)}"
    shapes = [tuple(int(d) for d in v.type.shape) for v in node.inputs]
    k = 2 * max(1, accumulation_length(get_op(node.op), shapes, node.attrs))
    for i, (g, t) in enumerate(zip(got, t32)):
        if g.shape != t.shape or g.dtype.kind != t.dtype.kind:
            return f"output {i}: {g.dtype}{list(g.shape)}, torch gives {t.dtype}{list(t.shape)}"
        t = t.astype(g.dtype)
        if g.dtype.kind != "f":
            c = compare(g, t, Rule("exact"))
            if not c.ok:
                return f"output {i}: {c.reason}"
            continue
        c = compare(g, t, Rule("reduction", 4), k)
        if c.ok or c.metrics.nan_mismatches or c.metrics.inf_mismatches:
            if not c.ok:
                return f"output {i}: {c.reason}"
            continue
        try:  # only a value difference: who is nearer the float64 result?
            truth = _twin(torch, node, args, wide=True)[i].astype(np.float64)
        except Exception:
            return f"output {i}: {c.reason}"
        g64, t64 = g.astype(np.float64), t.astype(np.float64)
        scale = max(1.0, float(np.nanmax(np.abs(truth)))) if truth.size else 1.0
        allowed = (
            4 * np.abs(t64 - truth)
            + 2 * k * 2.0**-23 * scale
            + 4 * np.spacing(np.abs(truth).astype(g.dtype)).astype(np.float64)
        )
        worse = np.abs(g64 - truth) > allowed
        if worse.any():
            j = tuple(int(x) for x in np.argwhere(worse)[0])
            return (
                f"output {i}: {int(worse.sum())} elements further from the float64 result than "
                f"torch's float32 kernel; first at {j}: cuvil {g64[j]!r}, torch {t64[j]!r}, "
                f"float64 {truth[j]!r}"
            )
    return ""


def _same_kind(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype.kind == b.dtype.kind


def _torch_rejects(exc: Exception) -> bool:
    return isinstance(exc, (RuntimeError, NotImplementedError, TypeError, ValueError, IndexError))
