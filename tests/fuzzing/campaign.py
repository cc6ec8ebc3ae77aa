"""A fuzz campaign over the artifact loader and the IR parser.

    python -m tests.fuzzing.campaign --artifacts 10000 --texts 3000 --seed 0

Every case is a malformed input made from a valid seed (``seeds``) by the mutators
(``artifact_mutations``, ``text_mutations``); case ``i`` is reproducible from ``--seed`` and
``i`` alone (``--only artifact:17`` reruns one). A case passes when loading/parsing either
succeeds or raises a :class:`~cuvil_ref.errors.CuvilError` whose message is at most
``MAX_MESSAGE`` characters; it fails on any other exception, on a case running longer than
``--case-seconds`` (a hang), or on a ``MemoryError`` under the ``--memory-gib`` address-space limit
(a blowup). A parse that succeeds must also print and re-parse to the same text. A crash of the
interpreter ends the run with a nonzero status. Exit status: 0 when every case passed.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cuvil_ref.errors import MAX_MESSAGE, CuvilError


class Hang(Exception):
    """Raised by the alarm when a case runs past its time limit."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


def artifact_cases(seed: int, count: int) -> Iterator[tuple[int, bytes]]:
    from tests.fuzzing.artifact_mutations import mutate_artifact
    from tests.fuzzing.seeds import seed_artifacts

    seeds = seed_artifacts()
    for i in range(count):
        rng = random.Random(f"artifact:{seed}:{i}")
        yield i, mutate_artifact(seeds[i % len(seeds)], rng)


def text_cases(seed: int, count: int) -> Iterator[tuple[int, str]]:
    from tests.fuzzing.seeds import seed_texts
    from tests.fuzzing.text_mutations import mutate_text

    seeds = seed_texts()
    for i in range(count):
        rng = random.Random(f"text:{seed}:{i}")
        yield i, mutate_text(seeds[i % len(seeds)], rng)


def check_artifact(data: bytes, path: Path) -> str:
    """Load ``data`` as an artifact; the outcome's name (an error class or ``loaded``)."""
    import cuvil_ref as cuvil
    from cuvil_ref.ir.printer import print_module

    path.write_bytes(data)
    try:
        module = cuvil.load(str(path))
    except CuvilError as exc:
        _bounded(exc)
        return type(exc).__name__
    print_module(module, inline_limit=0)  # what loads must print
    return "loaded"


def check_text(text: str) -> str:
    """Parse ``text``; a parsed module must print and re-parse to the same text."""
    from cuvil_ref.ir.parser import parse_module
    from cuvil_ref.ir.printer import print_module

    try:
        module = parse_module(text)
    except CuvilError as exc:
        _bounded(exc)
        return type(exc).__name__
    printed = print_module(module, inline_limit=10_000)
    again = print_module(parse_module(printed), inline_limit=10_000)
    if again != printed:
        raise AssertionError("print(parse(print(parse(text)))) differs from print(parse(text))")
    return "parsed"


def _bounded(exc: CuvilError) -> None:
    if len(str(exc)) > MAX_MESSAGE:
        raise AssertionError(f"error message of {len(str(exc))} characters")


def run(
    name: str,
    cases: Iterator[tuple[int, Any]],
    check: Callable[[Any], str],
    case_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[dict[str, Any]] = []
    slowest = 0.0
    start = time.perf_counter()
    for i, case in cases:
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, case_seconds)
        try:
            outcomes[check(case)] += 1
        except Hang:
            outcomes["FAIL:hang"] += 1
            failures.append({"case": f"{name}:{i}", "error": f"ran over {case_seconds} s"})
        except BaseException as exc:  # noqa: BLE001 - everything else is what we look for
            if isinstance(exc, KeyboardInterrupt):
                raise
            outcomes[f"FAIL:{type(exc).__name__}"] += 1
            failures.append(
                {
                    "case": f"{name}:{i}",
                    "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                    "where": traceback.format_exc().splitlines()[-3:],
                }
            )
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        slowest = max(slowest, time.perf_counter() - t0)
        done = sum(outcomes.values())
        if done % 1000 == 0:
            log(f"  {name}: {done} cases, {len(failures)} failures")
    return {
        "cases": sum(outcomes.values()),
        "outcomes": dict(sorted(outcomes.items())),
        "failures": failures,
        "slowest_case_s": round(slowest, 3),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", type=int, default=10_000, help="malformed artifacts")
    ap.add_argument("--texts", type=int, default=3_000, help="malformed IR texts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", metavar="KIND:I", help="rerun one case, e.g. artifact:17")
    ap.add_argument("--case-seconds", type=float, default=10.0, help="a longer case is a hang")
    ap.add_argument("--memory-gib", type=float, default=4.0, help="address-space limit")
    ap.add_argument("--json", metavar="FILE", help="write the summary as JSON")
    args = ap.parse_args(argv)

    limit = int(args.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    artifacts, texts = args.artifacts, args.texts
    first = 0
    if args.only:
        kind, _, index = args.only.partition(":")
        first = int(index)
        artifacts, texts = (first + 1, 0) if kind == "artifact" else (0, first + 1)
    summary: dict[str, Any] = {"seed": args.seed}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.cuvilir"
        a_cases = ((i, c) for i, c in artifact_cases(args.seed, artifacts) if i >= first)
        summary["artifacts"] = run(
            "artifact", a_cases, lambda d: check_artifact(d, path), args.case_seconds, log
        )
    t_cases = ((i, c) for i, c in text_cases(args.seed, texts) if i >= first)
    summary["texts"] = run("text", t_cases, check_text, args.case_seconds, log)
    summary["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    failed = summary["artifacts"]["failures"] or summary["texts"]["failures"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
