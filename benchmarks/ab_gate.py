"""The release pipeline's A/B performance gate: compare two pytest-benchmark JSON files.

    python benchmarks/ab_gate.py BASE.json HEAD.json [--threshold 0.10]
        [--thresholds gate.json] [--min-rounds 5] [--markdown report.md]

For every benchmark in both files (matched by ``fullname``) it compares the medians: ``ratio =
head / base``. A benchmark **regresses** when the ratio exceeds ``1 + threshold`` *and* the
difference is beyond the noise of the two runs: the head run's first quartile lies above the
base run's third quartile, so the middle halves of the two timing distributions do not overlap.
A slowdown past the threshold whose quartiles overlap is reported as ``noisy`` and passes (run
it on a quieter machine or with more rounds); a benchmark with fewer than ``--min-rounds``
rounds in either file cannot be judged (``too few rounds``, passes unless ``--strict``).
Improvements are judged the same way. A benchmark missing from the head run fails the gate (a
deleted benchmark hides a regression) unless ``--allow-missing``.

Per-benchmark thresholds: a JSON object of ``fnmatch`` patterns over ``fullname`` (or name)
to fractions, the first match wins: ``{"*test_compile_*": 0.25, "*resnet18*": 0.15}``.

Prints a Markdown table (and writes it with ``--markdown``, e.g. to ``$GITHUB_STEP_SUMMARY``);
exits 1 when any benchmark regresses, 2 on unusable input.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATS = ("median", "q1", "q3", "rounds")


class GateInputError(Exception):
    """A file that is not pytest-benchmark JSON, or a threshold file that does not parse."""


@dataclass(frozen=True)
class Row:
    name: str
    base: float | None
    head: float | None
    ratio: float | None
    threshold: float
    verdict: str  # ok | regression | improvement | noisy | too few rounds | missing | new

    @property
    def fails(self) -> bool:
        return self.verdict in ("regression", "missing")


def load_benchmarks(path: str | Path) -> dict[str, dict[str, float]]:
    """``fullname`` -> the statistics the gate uses, from a pytest-benchmark JSON file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GateInputError(f"{path}: not a readable JSON file: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise GateInputError(
            f"{path}: not pytest-benchmark output (no 'benchmarks' list); write it with "
            "pytest --benchmark-json=FILE"
        )
    out = {}
    for i, b in enumerate(doc["benchmarks"]):
        name = b.get("fullname") or b.get("name") if isinstance(b, dict) else None
        stats = b.get("stats") if isinstance(b, dict) else None
        if not isinstance(name, str) or not isinstance(stats, dict):
            raise GateInputError(f"{path}: benchmarks[{i}] has no fullname or stats")
        missing = [k for k in STATS if not isinstance(stats.get(k), (int, float))]
        if missing:
            raise GateInputError(f"{path}: {name}: stats lack {missing}")
        out[name] = {k: float(stats[k]) for k in STATS}
    return out


def load_thresholds(path: str | Path | None) -> list[tuple[str, float]]:
    if path is None:
        return []
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GateInputError(f"{path}: not a readable JSON file: {exc}") from None
    if not isinstance(doc, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in doc.values()
    ):
        raise GateInputError(f'{path}: must map patterns to fractions, e.g. {{"*resnet*": 0.15}}')
    return [(str(k), float(v)) for k, v in doc.items()]


def threshold_for(name: str, patterns: list[tuple[str, float]], default: float) -> float:
    short = name.rsplit("::", 1)[-1]
    for pattern, value in patterns:
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(short, pattern):
            return value
    return default


def judge(
    base: dict[str, float], head: dict[str, float], threshold: float, min_rounds: int
) -> tuple[float, str]:
    """(ratio of medians, verdict) for one benchmark."""
    ratio = head["median"] / base["median"] if base["median"] > 0 else float("inf")
    if min(base["rounds"], head["rounds"]) < min_rounds:
        return ratio, "too few rounds"
    if ratio > 1 + threshold:
        return ratio, "regression" if head["q1"] > base["q3"] else "noisy"
    if ratio < 1 / (1 + threshold):
        return ratio, "improvement" if head["q3"] < base["q1"] else "ok"
    return ratio, "ok"


def compare(
    base: dict[str, dict[str, float]],
    head: dict[str, dict[str, float]],
    *,
    threshold: float = 0.10,
    patterns: list[tuple[str, float]] | None = None,
    min_rounds: int = 5,
    allow_missing: bool = False,
) -> list[Row]:
    rows = []
    for name in sorted(set(base) | set(head)):
        t = threshold_for(name, patterns or [], threshold)
        b, h = base.get(name), head.get(name)
        if b is None:
            rows.append(Row(name, None, h["median"] if h else None, None, t, "new"))
            continue
        if h is None:
            verdict = "missing (allowed)" if allow_missing else "missing"
            rows.append(Row(name, b["median"], None, None, t, verdict))
            continue
        ratio, verdict = judge(b, h, t, min_rounds)
        rows.append(Row(name, b["median"], h["median"], ratio, t, verdict))
    return rows


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def markdown(rows: list[Row]) -> str:
    failed = [r for r in rows if r.fails]
    head = "FAIL" if failed else "PASS"
    lines = [
        f"### A/B benchmark gate: {head} ({len(failed)} of {len(rows)} benchmarks fail)",
        "",
        "| benchmark | base median | head median | head/base | threshold | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ratio = "--" if r.ratio is None else f"{r.ratio:.3f}"
        mark = f"**{r.verdict}**" if r.fails else r.verdict
        lines.append(
            f"| `{r.name}` | {_time(r.base)} | {_time(r.head)} | {ratio} | "
            f"+{r.threshold:.0%} | {mark} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="pytest-benchmark JSON of the base (e.g. main)")
    p.add_argument("head", help="pytest-benchmark JSON of the candidate")
    p.add_argument("--threshold", type=float, default=0.10, help="default allowed slowdown")
    p.add_argument("--thresholds", help="JSON file: fnmatch pattern -> allowed slowdown")
    p.add_argument("--min-rounds", type=int, default=5)
    p.add_argument("--strict", action="store_true", help="'too few rounds' and 'noisy' fail")
    p.add_argument("--allow-missing", action="store_true")
    p.add_argument("--markdown", help="also write the table to this file (appends)")
    args = p.parse_args(argv)
    try:
        rows = compare(
            load_benchmarks(args.base),
            load_benchmarks(args.head),
            threshold=args.threshold,
            patterns=load_thresholds(args.thresholds),
            min_rounds=args.min_rounds,
            allow_missing=args.allow_missing,
        )
    except GateInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("error: the two files have no benchmarks", file=sys.stderr)
        return 2
    table = markdown(rows)
    print(table, end="")
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as f:
            f.write(table)
    strict = ("too few rounds", "noisy") if args.strict else ()
    return 1 if any(r.fails or r.verdict in strict for r in rows) else 0


def _cli() -> Any:
    sys.exit(main())


if __name__ == "__main__":
    _cli()
