"""The runner: one code path for every pack.

For each case: build the one-node graph, compute the expected outputs with the reference
interpreter, ask the pack whether it supports the node (``unsupported`` otherwise — never
``passed``), lower it through the pack's ``cuvil_lower_partition``, run it and compare under the
tolerance policy. Model cases compile a whole zoo model for the target and compare the pack's
result with the interpreter on the same optimized module; a model none of whose nodes ran on the
target is ``unsupported``, so a pack cannot pass by falling back to ``ref``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from cuvil_conformance.cases import Case
from cuvil_conformance.generators import generate_cases, suite_ops
from cuvil_conformance.generators.points import conditioning
from cuvil_conformance.tolerance import Metrics, Rule, compare, rule_for
from cuvil_ref.interpreter import interpret
from cuvil_ref.ops import REGISTRY
from cuvil_ref.passes.memory_plan import plan_memory
from cuvil_ref.plugin.host import PluginHost, get_host
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import ConformancePolicy

STATUSES = ("passed", "failed", "error", "unsupported", "skipped")


@dataclass
class CaseResult:
    """One case's outcome. ``metrics`` (None when nothing was compared) holds the NaN-aware
    error figures; ``max_abs_err``/``max_ulp`` repeat its maxima for convenience."""

    id: str
    op: str
    dtype: str
    status: str
    reason: str = ""
    bound: str = ""
    seconds: float = 0.0
    rule: str = "basic"
    metrics: Metrics | None = None

    @property
    def max_abs_err(self) -> float | None:
        return self.metrics.max_abs_err if self.metrics else None

    @property
    def max_ulp(self) -> float | None:
        return self.metrics.max_ulp if self.metrics else None

    def to_json(self) -> dict[str, Any]:
        """Typed: numbers are finite floats or null, counts are ints."""
        d = asdict(self)
        d["metrics"] = self.metrics.to_json() if self.metrics else None
        d["max_abs_err"], d["max_ulp"] = self.max_abs_err, self.max_ulp
        return d


@dataclass
class SuiteReport:
    target: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    deviations: list[dict[str, str]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        counts = {s: 0 for s in STATUSES}
        for r in self.results:
            counts[r.status] += 1
        supported_ops = {r.op for r in self.results if r.status in ("passed", "failed", "error")}
        registry_ops = [op for op in self.ops if op in REGISTRY]
        coverage = (
            len(supported_ops & set(registry_ops)) / len(registry_ops) if registry_ops else 0.0
        )
        return {
            "available": bool(self.target.get("available", True)),
            "claimed": counts["passed"] + counts["failed"] + counts["error"],
            "passed": counts["passed"],
            "failed": counts["failed"],
            "errors": counts["error"],
            "unsupported": counts["unsupported"],
            "skipped": counts["skipped"],
            "total": len(self.results),
            "coverage": round(coverage, 4),
            "supported_ops": sorted(supported_ops),
            "uncovered_ops": list(self.uncovered),
            "seconds": round(self.seconds, 3),
        }

    @property
    def ok(self) -> bool:
        """Nothing failed or errored, every op has cases, and the pack ran at least one case
        (a pack that claims nothing has shown nothing)."""
        s = self.summary()
        return s["failed"] == 0 and s["errors"] == 0 and not self.uncovered and s["claimed"] > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "summary": self.summary(),
            "deviations": self.deviations,
            "cases": [r.to_json() for r in self.results],
        }


def _policy(host: PluginHost, spec: TargetSpec) -> ConformancePolicy:
    return host.call("cuvil_conformance_policy", spec, target=spec) or ConformancePolicy()


def skip_reason(policy: ConformancePolicy, case_id: str, op: str) -> str | None:
    """The pack's reason for skipping a case: keyed by the case id, the op, or a glob over case
    ids (``fused_*activation=gelu*``), so a declared deviation names exactly the cases it covers."""
    if reason := policy.skips.get(case_id) or policy.skips.get(op):
        return reason
    return next((r for key, r in policy.skips.items() if fnmatchcase(case_id, key)), None)


def run_case(
    case: Case,
    spec: TargetSpec,
    host: PluginHost,
    policy: ConformancePolicy,
    expected_cache: dict[str, list[np.ndarray]] | None = None,
) -> CaseResult:
    """Run one case on ``spec``'s pack and judge it.

    ``expected_cache`` (case id -> interpreter outputs) lets several runs share the reference
    results; the pack is asked whether it supports the node before the interpreter runs.
    """
    t0 = time.perf_counter()
    result = CaseResult(case.id, case.op, case.dtype, "error", rule=case.rule)
    skip = skip_reason(policy, case.id, case.op)
    rule: Rule = rule_for(case.op, policy)
    result.bound = rule.describe() + (f" (pack: {rule.reason})" if rule.reason else "")
    if skip:
        result.status, result.reason = "skipped", skip
        return result
    try:
        graph, inputs = case.build()
    except Exception as exc:  # the case itself is invalid: report it as an error of the suite
        result.reason = f"case could not be built or interpreted: {type(exc).__name__}: {exc}"
        return result
    try:
        answer = host.call(
            "cuvil_supports_node", spec, target=spec, node=graph.nodes[0], graph=graph
        )
    except Exception as exc:
        result.reason = f"cuvil_supports_node raised {type(exc).__name__}: {exc}"
        return result
    if answer is None or not answer.supported:
        result.status = "unsupported"
        result.reason = answer.reason if answer is not None else "the pack gave no answer"
        return result
    try:
        expected = (expected_cache or {}).get(case.id) or interpret(graph, inputs)
        if expected_cache is not None:
            expected_cache[case.id] = expected
    except Exception as exc:
        result.reason = f"case could not be built or interpreted: {type(exc).__name__}: {exc}"
        return result
    try:
        options = dict(spec.options)
        options.update({"opt_level": 0, "memory_plan": plan_memory(graph)})
        exe = host.call("cuvil_lower_partition", spec, target=spec, graph=graph, options=options)
        if exe is None:
            result.reason = "the pack claimed the node but returned no executable"
            return result
        got = exe.run(inputs)
    except Exception as exc:
        result.reason = f"{type(exc).__name__}: {exc}"
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            result.reason += f" (at {tb[-1].filename}:{tb[-1].lineno})"
        return result
    finally:
        result.seconds = time.perf_counter() - t0
    if len(got) != len(expected):
        result.status = "failed"
        result.reason = f"{len(got)} outputs, expected {len(expected)}"
        return result
    metrics, reasons = Metrics(), []
    k = case.reduce_len + conditioning(REGISTRY.get(case.op), case.materialize(), case.attrs)
    for i, (g, w) in enumerate(zip(got, expected)):
        c = compare(np.asarray(g), w, rule, k)
        metrics = metrics.worst(c.metrics)
        if not c.ok:
            reasons.append(f"output {i}: {c.reason}")
    result.metrics = metrics
    result.status = "failed" if reasons else "passed"
    result.reason = "; ".join(reasons)
    result.seconds = time.perf_counter() - t0
    return result


def run_suite(
    target: str | dict[str, Any] | TargetSpec,
    ops: Sequence[str] | None = None,
    *,
    quick: bool = False,
    models: bool = False,
    host: PluginHost | None = None,
    on_case: Callable[[CaseResult, int, int], None] | None = None,
    cases: Sequence[Case] | None = None,
    expected_cache: dict[str, list[np.ndarray]] | None = None,
) -> SuiteReport:
    """Run the suite (or the given ``cases``) for ``target``."""
    host = host or get_host()
    spec = host.resolve(target)
    t0 = time.perf_counter()
    avail = host.availability(spec)
    target_info = spec.to_json()
    target_info.update(
        {
            "available": avail.available,
            "reason": avail.reason,
            "device": avail.device,
            "pack": host.pack_of(spec.name).name,
            "pack_version": host.pack_of(spec.name).version,
        }
    )
    if cases is None:
        cases, missing = generate_cases(ops, quick=quick)
    else:
        missing = []
    op_names = list(ops) if ops else suite_ops()
    report = SuiteReport(target_info, uncovered=missing, ops=op_names)
    policy = _policy(host, spec)
    report.deviations = [
        {"op": op, "bound": str(tol), "reason": reason}
        for op, (tol, reason) in policy.tolerances.items()
    ] + [{"op": key, "bound": "skipped", "reason": reason} for key, reason in policy.skips.items()]
    model_cases: list[Any] = []
    if models:
        from cuvil_conformance.models import model_cases as _mc

        model_cases = list(_mc(quick=quick))
    total = len(cases) + len(model_cases)
    for i, case in enumerate(cases):
        if not avail.available:
            r = CaseResult(
                case.id,
                case.op,
                case.dtype,
                "unsupported",
                reason=f"target unavailable: {avail.reason}",
                rule=case.rule,
            )
        else:
            r = run_case(case, spec, host, policy, expected_cache)
        report.results.append(r)
        if on_case:
            on_case(r, i + 1, total)
    for j, mc in enumerate(model_cases):
        if not avail.available:
            r = CaseResult(
                mc.id, mc.op, "f32", "unsupported", reason=f"target unavailable: {avail.reason}"
            )
        else:
            r = mc.run(spec, host)
        report.results.append(r)
        if on_case:
            on_case(r, len(cases) + j + 1, total)
    report.seconds = time.perf_counter() - t0
    return report
