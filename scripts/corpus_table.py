#!/usr/bin/env python
"""Compile every model of the transformers corpus and print the table.

    python scripts/corpus_table.py                 # all models
    python scripts/corpus_table.py bert llama vit  # some

Columns: model, family, capture path, IR nodes, compile ms, max relative error against eager
(example and fresh inputs), or the error Cuvil raised. The corpus is
``tests/frontend/corpus/models.py`` (small configs, random weights, no downloads).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.frontend.corpus.models import BY_NAME, ENTRIES  # noqa: E402
from tests.frontend.corpus.runner import TOLERANCE, run_entry  # noqa: E402


def main(argv: list[str]) -> int:
    entries = [BY_NAME[n] for n in argv] if argv else ENTRIES
    print("| model | family | capture | nodes | compile ms | max rel error | result |")
    print("|---|---|---|---|---|---|---|")
    good = 0
    for e in entries:
        r = run_entry(e, cache=False)
        good += r.ok
        err = "" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"
        what = "ok" if r.ok else (f"{r.error_type}: {r.error}"[:300].replace("\n", " ") or "error")
        what = what.replace("|", "/")
        print(
            f"| {r.name} | {r.family} | {r.capture} | {r.nodes or ''} | "
            f"{r.compile_ms:.0f} | {err} | {what} |",
            flush=True,
        )
    print(f"\n{good} of {len(entries)} match eager within {TOLERANCE:g} relative")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
