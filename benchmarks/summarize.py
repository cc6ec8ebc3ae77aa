"""Turn a pytest-benchmark JSON file into the Markdown tables of docs/benchmarks.md.

Within each group the first test named in ``BASELINES`` (torch eager or the fp32 interpreter) is
the comparison; every row shows its median and its ratio to that baseline from the same run.
"""

from __future__ import annotations

import json
import sys

BASELINES = ("torch_eager", "interpret_fp32", "opt_level0", "[0]")


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        groups.setdefault(b["group"] or "-", []).append(b)
    machine = data.get("machine_info", {})
    print(
        f"Machine: {machine.get('cpu', {}).get('brand_raw', '?')}, "
        f"{machine.get('cpu', {}).get('count', '?')} cores; {data.get('datetime', '')}\n"
    )
    for group, rows in groups.items():
        base = next((r for r in rows if any(k in r["name"] for k in BASELINES)), None)
        print(f"### {group}\n")
        print("| benchmark | median | min | ratio to baseline | extra |")
        print("|---|---:|---:|---:|---|")
        for r in rows:
            med = r["stats"]["median"]
            ratio = f"{med / base['stats']['median']:.2f}x" if base else "-"
            extra = ", ".join(f"{k}={v}" for k, v in r.get("extra_info", {}).items())
            print(
                f"| {r['name']} | {med * 1e3:.1f} ms | {r['stats']['min'] * 1e3:.1f} ms | "
                f"{ratio} | {extra} |"
            )
        print()


if __name__ == "__main__":
    main(sys.argv[1])
