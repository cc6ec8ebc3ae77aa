"""Terminal output for the CLI: consoles, the error line, and the compile report as rich tables.

Every console is made at call time so that it writes to whatever ``sys.stdout``/``sys.stderr`` are
then (click's test runner swaps them). Text that may contain ``[`` (types such as ``f32[1,3]``) is
printed with markup off, so rich never mistakes it for a style tag.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def print_error(message: str) -> None:
    """The one red ``error: ...`` line a user error ends with."""
    stderr_console().print(Text(f"error: {message}", style="bold red"), soft_wrap=True)


def print_warning(message: str) -> None:
    stderr_console().print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)


def echo_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, never wrapped or styled."""
    import click

    click.echo(json.dumps(data, indent=2, sort_keys=True, default=_json_default))


def to_json_text(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=_json_default)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def format_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} GiB"  # pragma: no cover


def format_value(value: Any) -> str:
    """A cell: floats with 4 significant digits, ints with separators, None as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_value(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value) or "-"
    return str(value)


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    """A rich table whose cells are plain text (no markup)."""
    t = Table(title=title, title_justify="left", title_style="bold")
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        t.add_row(*(c if isinstance(c, Text) else Text(format_value(c)) for c in row))
    return t


def kv_table(title: str, items: Mapping[str, Any]) -> Table:
    return table(title, ("key", "value"), items.items())


def yes_no(flag: bool) -> Text:
    return Text("yes", style="green") if flag else Text("no", style="red")


# --- the compile report ---------------------------------------------------------------------


def render_report(report: Mapping[str, Any], console: Console) -> None:
    """Every section of ``CompiledProgram.report()`` that has content, as tables."""
    target = report.get("target") or {}
    cache = report.get("cache") or {}
    console.print(
        kv_table(
            "compile",
            {
                "target": target.get("target") if isinstance(target, Mapping) else target,
                "options": target.get("options") if isinstance(target, Mapping) else None,
                "opt_level": report.get("opt_level"),
                "quantize": report.get("quantize") or "none (fp32)",
                "cache": ("hit" if cache.get("hit") else "miss") if cache.get("enabled") else "off",
            },
        )
    )
    for section in (_partitions, _fallback, _passes, _memory, _quantization):
        for renderable in section(report):
            console.print(renderable)
    for renderable in metrics_tables(report.get("metrics") or {}):
        console.print(renderable)


def _partitions(report: Mapping[str, Any]) -> list[Any]:
    parts = (report.get("partitions") or {}).get("partitions") or []
    rows = [
        (i, p["target"], p["nodes"], p.get("ops"), p.get("inputs"), p.get("outputs"))
        for i, p in enumerate(parts)
    ]
    return [table("partitions", ("#", "target", "nodes", "ops", "inputs", "outputs"), rows)]


def _fallback(report: Mapping[str, Any]) -> list[Any]:
    nodes = (report.get("partitions") or {}).get("fallback") or []
    if not nodes:
        return [Text("fallback: none (every node runs on the target)", style="green")]
    rows = [(f"%{f['node']}", f["op"], f["reason"], f.get("source")) for f in nodes]
    return [table(f"fallback to ref ({len(rows)} nodes)", ("node", "op", "reason", "source"), rows)]


def _passes(report: Mapping[str, Any]) -> list[Any]:
    passes = report.get("passes") or []
    if not passes:
        return [Text("passes: none ran (opt_level 0, or a cache hit)")]
    rows = [
        (
            p.get("pass"),
            f"{1e3 * float(p.get('seconds', 0.0)):.2f}",
            p.get("changed"),
            p.get("nodes"),
        )
        for p in passes
    ]
    return [table("passes", ("pass", "ms", "changed", "nodes after"), rows)]


def _memory(report: Mapping[str, Any]) -> list[Any]:
    mem = report.get("memory")
    if not mem:
        return []
    return [memory_table(mem)]


def memory_table(mem: Mapping[str, Any]) -> Table:
    return kv_table(
        "memory plan",
        {
            "planned peak": format_bytes(mem.get("planned_peak_bytes")),
            "naive sum": format_bytes(mem.get("naive_sum_bytes")),
            "saving": f"{100 * float(mem.get('saving', 0.0)):.1f} %",
            "buffers": mem.get("buffers"),
            "in place": mem.get("in_place"),
            "symbol bindings": mem.get("symbol_bindings") or None,
        },
    )


def _quantization(report: Mapping[str, Any]) -> list[Any]:
    q = report.get("quantization")
    if not q:
        return []
    head = {k: q.get(k) for k in ("mode", "observer", "per_channel", "calibration_batches")}
    head["output SQNR dB"] = q.get("output_sqnr_db")
    head.update({f"layers {k}": v for k, v in (q.get("summary") or {}).items()})
    rows = [
        (f"%{x.get('node')}", x.get("op"), x.get("scheme"), x.get("sqnr_db"), x.get("reason"))
        for x in q.get("layers") or []
    ]
    return [
        kv_table("quantization", head),
        table("quantization per layer", ("node", "op", "scheme", "SQNR dB", "note"), rows),
    ]


METRIC_ORDER = (
    "cycles",
    "latency_ms",
    "roofline_cycles",
    "mac_utilization",
    "macs",
    "dram_bytes",
    "sram_bytes",
    "energy_pj",
    "power_w",
)


#: Per-layer columns (key -> header), kept few and short so the table fits a terminal.
LAYER_COLUMNS = {
    "name": "layer",
    "node": "node",
    "op": "op",
    "cycles": "cycles",
    "roofline_cycles": "roofline",
    "mac_utilization": "MAC util",
    "dram_bytes": "DRAM B",
    "sram_bytes": "SRAM B",
    "energy_pj": "pJ",
    "algorithm": "algorithm",
    "ms": "ms",
    "share": "share",
    "gflops": "GFLOP/s",
}


def metrics_tables(metrics: Mapping[str, Any], title: str = "target metrics") -> list[Any]:
    """Scalars as a key/value table (known NPU metrics first); a ``layers`` list as its own table.

    A program with several partitions reports ``{"partition0:npu-v3": {...}, ...}``: each gets its
    own tables.
    """
    if not metrics:
        return []
    if all(isinstance(v, Mapping) for v in metrics.values()):
        out: list[Any] = []
        for name, sub in metrics.items():
            out.extend(metrics_tables(sub, f"{title} ({name})"))
        return out
    scalars = {k: v for k, v in metrics.items() if not isinstance(v, (list, Mapping))}
    ordered = {k: scalars[k] for k in METRIC_ORDER if k in scalars}
    ordered.update({k: v for k, v in scalars.items() if k not in ordered})
    out = [kv_table(title, ordered)]
    layers = metrics.get("layers")
    if isinstance(layers, list) and layers and all(isinstance(x, Mapping) for x in layers):
        keys = [k for k in LAYER_COLUMNS if any(k in layer for layer in layers)]
        rows = [[layer.get(k) for k in keys] for layer in layers]
        out.append(table(f"{title} per layer", [LAYER_COLUMNS[k] for k in keys], rows))
    return out
