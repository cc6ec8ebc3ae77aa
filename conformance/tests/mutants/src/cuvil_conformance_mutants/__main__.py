"""``python -m cuvil_conformance_mutants [--quick] [--json PATH]``: the mutant catch rate.

Runs the conformance suite (full, or ``--quick``) on every installed mutant target and every
control. A mutant is *caught* when the run fails (a case failed or errored); a control must pass
with at least one case run. Exit status 1 when a control fails, when the full suite misses any
mutant, or when ``--quick`` catches fewer than 90%.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from cuvil_conformance.generators import generate_cases
from cuvil_conformance.runner import run_suite

from cuvil_conformance_mutants.catalog import MUTANTS, controls
from cuvil_ref.plugin.host import get_host

QUICK_THRESHOLD = 0.9


def catch_rates(quick: bool) -> dict[str, Any]:
    """Run the suite on every mutant and control; returns per-target outcomes and the rate."""
    host = get_host()
    missing = [m.target for m in MUTANTS.values() if m.target not in host.target_names()]
    if missing:
        raise SystemExit(
            f"mutant targets not installed: {', '.join(missing)} (run scripts/setup.sh, which "
            "installs conformance/tests/mutants)"
        )
    cases, _ = generate_cases(quick=quick)
    cache: dict[str, list[np.ndarray]] = {}
    rows: dict[str, Any] = {}
    for m in [*MUTANTS.values(), *controls().values()]:
        # the whole suite, less the cases of ops the pack does not claim (they would only be
        # reported unsupported): the outcome is the same, the run much shorter
        mine = [c for c in cases if c.op in m.ops]
        report = run_suite(m.target, host=host, cases=mine, expected_cache=cache)
        s = report.summary()
        bad = [r for r in report.results if r.status in ("failed", "error")]
        rows[m.name] = {
            "ops": list(m.ops),
            "bug": m.bug,
            "rule": m.rule,
            "claimed": s["claimed"],
            "failed_cases": len(bad),
            "caught_by": sorted({r.rule for r in bad}),
            "first_failure": f"{bad[0].id}: {bad[0].reason[:160]}" if bad else "",
        }
    mutants = [rows[n] for n in MUTANTS]
    caught = sum(1 for r in mutants if r["failed_cases"])
    return {
        "quick": quick,
        "mutants": len(mutants),
        "caught": caught,
        "rate": caught / len(mutants),
        "cases": len(cases),
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuvil_conformance_mutants")
    parser.add_argument("--quick", action="store_true", help="the --quick subset of cases")
    parser.add_argument("--json", default=None, help="write the outcomes as JSON")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    result = catch_rates(args.quick)
    bad_controls = []
    for name, row in result["rows"].items():
        is_control = name not in MUTANTS
        status = "caught" if row["failed_cases"] else "MISSED"
        if is_control:
            status = "ok" if not row["failed_cases"] and row["claimed"] else "CONTROL FAILED"
            if status != "ok":
                bad_controls.append(name)
        print(
            f"{status:<14} {name:<34} {row['failed_cases']:>4} failing cases  "
            f"{','.join(row['caught_by'])}  {row['first_failure'][:90]}"
        )
    mode = "--quick" if args.quick else "full"
    print(
        f"\n{mode}: {result['caught']}/{result['mutants']} mutants caught "
        f"({result['rate']:.1%}) over {result['cases']} cases in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    need = QUICK_THRESHOLD if args.quick else 1.0
    return 1 if bad_controls or result["rate"] < need else 0


if __name__ == "__main__":
    sys.exit(main())
