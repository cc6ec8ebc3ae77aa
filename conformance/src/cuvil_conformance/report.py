"""Report writers: JSON, Markdown, JUnit XML and a standalone HTML page."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from cuvil_conformance.runner import SuiteReport


def write_json(report: SuiteReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")


def to_markdown(report: SuiteReport) -> str:
    s = report.summary()
    t = report.target
    lines = [
        f"# Conformance report: target `{t['target']}`",
        "",
        f"Pack `{t.get('pack')}` {t.get('pack_version')}, device: {t.get('device') or '-'}"
        + ("" if t.get("available", True) else f" — **unavailable**: {t.get('reason')}"),
        "",
        "| passed | failed | errors | unsupported | skipped | total | coverage |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s['passed']} | {s['failed']} | {s['errors']} | {s['unsupported']} | "
        f"{s['skipped']} | {s['total']} | {s['coverage']:.1%} |",
        "",
    ]
    if report.uncovered:
        lines += ["**Ops without conformance cases:** " + ", ".join(report.uncovered), ""]
    if report.deviations:
        lines += ["## Declared deviations", "", "| op / case | bound | reason |", "|---|---|---|"]
        lines += [f"| {d['op']} | {d['bound']} | {d['reason']} |" for d in report.deviations]
        lines.append("")
    bad = [r for r in report.results if r.status in ("failed", "error")]
    if bad:
        lines += ["## Failures and errors", "", "| case | status | reason |", "|---|---|---|"]
        lines += [f"| `{r.id}` | {r.status} | {r.reason.replace('|', '/')} |" for r in bad]
        lines.append("")
    per_op: dict[str, dict[str, int]] = {}
    for r in report.results:
        per_op.setdefault(r.op, {}).setdefault(r.status, 0)
        per_op[r.op][r.status] += 1
    lines += [
        "## Per op",
        "",
        "| op | passed | failed | errors | unsupported | skipped |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(
            f"| {op} | {c.get('passed', 0)} | {c.get('failed', 0)} | {c.get('error', 0)} | "
            f"{c.get('unsupported', 0)} | {c.get('skipped', 0)} |"
        )
    return "\n".join(lines) + "\n"


def write_markdown(report: SuiteReport, path: str | Path) -> None:
    Path(path).write_text(to_markdown(report), encoding="utf-8")


def write_junit(report: SuiteReport, path: str | Path) -> None:
    s = report.summary()
    suite = ET.Element(
        "testsuite",
        name=f"cuvil-conformance[{report.target['target']}]",
        tests=str(s["total"]),
        failures=str(s["failed"]),
        errors=str(s["errors"]),
        skipped=str(s["skipped"] + s["unsupported"]),
        time=f"{report.seconds:.3f}",
    )
    for r in report.results:
        tc = ET.SubElement(suite, "testcase", classname=r.op, name=r.id, time=f"{r.seconds:.4f}")
        if r.status == "failed":
            ET.SubElement(tc, "failure", message=r.reason[:500]).text = r.reason
        elif r.status == "error":
            ET.SubElement(tc, "error", message=r.reason[:500]).text = r.reason
        elif r.status in ("skipped", "unsupported"):
            ET.SubElement(tc, "skipped", message=f"{r.status}: {r.reason}")
    ET.ElementTree(suite).write(str(path), encoding="utf-8", xml_declaration=True)


_COLORS = {
    "passed": "#2e7d32",
    "failed": "#c62828",
    "error": "#ad1457",
    "unsupported": "#757575",
    "skipped": "#f9a825",
}


def write_html(report: SuiteReport, path: str | Path) -> None:
    s = report.summary()
    rows = "\n".join(
        f"<tr><td><code>{html.escape(r.id)}</code></td>"
        f"<td style='color:{_COLORS[r.status]}'>{r.status}</td>"
        f"<td>{'' if r.max_abs_err is None else f'{r.max_abs_err:.3g}'}</td>"
        f"<td>{'' if r.max_ulp is None else f'{r.max_ulp:.3g}'}</td>"
        f"<td>{html.escape(r.reason)}</td></tr>"
        for r in report.results
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>Cuvil conformance: {html.escape(str(report.target["target"]))}</title>
<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}}</style></head><body>
<h1>Conformance: {html.escape(str(report.target["target"]))}</h1>
<p>passed {s["passed"]} · failed {s["failed"]} · errors {s["errors"]} ·
unsupported {s["unsupported"]} · skipped {s["skipped"]} · total {s["total"]} ·
coverage {s["coverage"]:.1%}</p>
<table><tr><th>case</th><th>status</th><th>max abs err</th><th>max ulp</th><th>reason</th></tr>
{rows}</table></body></html>
"""
    Path(path).write_text(page, encoding="utf-8")
