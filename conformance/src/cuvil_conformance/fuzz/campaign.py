"""A time-bounded fuzz campaign: hypothesis draws graphs, the checks judge them, failures are
shrunk by hypothesis and saved as regression cases.

The campaign runs in rounds of ``batch`` examples, each round seeded from ``seed`` and its
number, until ``seconds`` have passed; a failure ends its round after hypothesis has shrunk it
to a minimal graph, which is saved and reported. The same seed replays the same rounds.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, settings

from cuvil_conformance.fuzz import regressions
from cuvil_conformance.fuzz.check import Finding, check_pipeline, check_torch, has_torch_twins
from cuvil_conformance.fuzz.graphs import FuzzCase, float_chains, int8_chains
from cuvil_ref.plugin.host import get_host
from cuvil_ref.plugin.types import TargetPreferences

MODES = ("pipeline", "torch")
FINITE_KINDS = ("normal", "unit", "small", "positive")


@dataclass
class FuzzReport:
    target: str
    mode: str
    seed: int
    examples: int = 0
    checked: int = 0  # examples that ran a check (torch mode skips chains without twins)
    rounds: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (ops, finding, path)
    ops_seen: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.failures


class _Failed(Exception):
    pass


def graph_strategy(target: str, mode: str) -> st.SearchStrategy[FuzzCase]:
    """Float and int8 chains; int8 only for targets that run only int8 graphs."""
    if mode == "torch":
        # finite inputs: where Cuvil and torch differ on infinities and NaN it is by a choice
        # stated in docs/float-semantics.md (gelu(+inf), cast of NaN...), not a finding
        return float_chains(dtypes=("f32",), guard_domains=True, kinds=FINITE_KINDS)
    host = get_host()
    spec = host.resolve(target)
    prefs = host.call("cuvil_preferences", spec, target=spec) or TargetPreferences()
    if prefs.requires_quantize:
        return int8_chains()
    return st.one_of(float_chains(), float_chains(), int8_chains())


def run_fuzz(
    target: str,
    seconds: float,
    seed: int = 0,
    mode: str = "pipeline",
    save_dir: str | Path = "fuzz-failures",
    batch: int = 25,
    max_failures: int = 5,
    max_examples: int | None = None,
    on_progress: Callable[[FuzzReport], None] | None = None,
) -> FuzzReport:
    """Fuzz ``target`` for about ``seconds`` (or until ``max_examples`` graphs: a deterministic
    budget for tests); returns what was run and what failed."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    report = FuzzReport(target, mode, seed)
    strategy = graph_strategy(target, mode)
    t0 = time.monotonic()
    last: list[tuple[FuzzCase, Finding]] = []  # the failing examples of the current round
    while (
        time.monotonic() - t0 < seconds
        and len(report.failures) < max_failures
        and (max_examples is None or report.examples < max_examples)
    ):
        last.clear()

        def check(case: FuzzCase) -> None:
            report.examples += 1
            report.ops_seen.update(n.op for n in case.module.graph.nodes)
            if mode == "torch" and not has_torch_twins(case):
                return
            report.checked += 1
            finding = check_torch(case) if mode == "torch" else check_pipeline(case, target)
            if finding is not None:
                last.append((case, finding))
                raise _Failed(str(finding))

        test = settings(
            max_examples=batch,
            deadline=None,
            database=None,
            derandomize=False,
            print_blob=False,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )(hypothesis.given(strategy)(check))
        test = hypothesis.seed(seed * 100_003 + report.rounds)(test)
        report.rounds += 1
        try:
            with warnings.catch_warnings():  # numpy/torch warn on the NaN and Inf drawn on purpose
                warnings.simplefilter("ignore")
                test()
        except _Failed:
            case, finding = last[-1]  # hypothesis replays the shrunk example last
            path = regressions.save(case, mode, target, str(finding), save_dir)
            if str(path) not in {f[2] for f in report.failures}:  # the same shrunk case again
                report.failures.append((case.describe(), str(finding), str(path)))
        report.seconds = time.monotonic() - t0
        if on_progress:
            on_progress(report)
    report.seconds = time.monotonic() - t0
    return report
