#!/usr/bin/env python
"""Measure Cuvil on PyTorch's OpInfo samples for every Core ATen op; write the coverage report.

    python scripts/aten_coverage.py                      # all core ops -> docs/aten-coverage.md
    python scripts/aten_coverage.py --ops aten::cos aten::sort --limit 5 --no-write -v

For each inference-meaningful Core ATen op, the OpInfos named in
``tests/frontend/opinfo/core_ops.py`` are run (float32 plus the integer/bool dtypes the op is
defined for; ``sample_inputs`` and ``reference_inputs``) through ``cuvil.torch.compile`` with the
default capture. The report lists each op's IR ops and pass counts, or why it is unsupported, and
``--json`` keeps every outcome. Exits 1 if any sample gives a wrong result or a non-Cuvil error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.frontend.opinfo.report import measure, write_markdown  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", nargs="*", help="core ops to measure (default: all)")
    ap.add_argument("--limit", type=int, default=None, help="samples per OpInfo and dtype")
    ap.add_argument("--out", default=str(ROOT / "docs" / "aten-coverage.md"))
    ap.add_argument("--json", default=None, help="also write every outcome as JSON here")
    ap.add_argument("--no-write", action="store_true", help="print the summary only")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every non-pass sample")
    args = ap.parse_args()
    t0 = time.perf_counter()
    results = measure(args.ops, args.limit, verbose=args.verbose)
    seconds = time.perf_counter() - t0
    bad = Counter()
    for r in results.values():
        for o in r["outcomes"]:
            if o["status"] in ("wrong", "crash"):
                bad[o["status"]] += 1
    summary = write_markdown(results, None if args.no_write else args.out, seconds, args.limit)
    print(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if bad:
        print(f"VIOLATIONS: {dict(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
