"""Generates ``docs/ops.md`` from the op registry, so the op reference cannot drift from the code.

    python -m cuvil_ref.docs_gen            # write docs/ops.md
    python -m cuvil_ref.docs_gen --check    # exit 1 if docs/ops.md is stale

Each op gets a summary row and a section: its signature (inputs, typed attributes with defaults in
the textual-IR syntax), the doc string with its formula, accepted dtypes, outputs, category and
version, and its per-op test knowledge: family, tolerance class, the semantic rules its
conformance grid covers and whether it has a torch twin. A table of the tolerance classes ends
the page, so ``docs/conformance.md`` need not list ops.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.printer import format_attr_value
from cuvil_ref.ops.families import TOLERANCE_CLASSES
from cuvil_ref.ops.registry import ATTR_KINDS, REQUIRED, Attr, OpDef

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "ops.md"
COMMAND = "python -m cuvil_ref.docs_gen"


def render_ops_markdown(ops: Iterable[OpDef] | None = None) -> str:
    """The whole of ``docs/ops.md`` for ``ops`` (default: every registered op)."""
    if ops is None:
        from cuvil_ref.ops import REGISTRY

        ops = REGISTRY
    opdefs = sorted(ops, key=lambda d: (d.category, d.name))
    categories = sorted({d.category for d in opdefs})
    lines = [
        "# Cuvil op reference",
        "",
        f"<!-- Generated from the op registry by `{COMMAND}`; do not edit by hand. -->",
        "",
        f"{len(opdefs)} ops in {len(categories)} categories. Attribute defaults are written in the",
        "textual-IR syntax (see [ir.md](ir.md)); an input ending in `?` is optional, one starting",
        "with `*` is variadic (one or more).",
        "",
        "| op | category | version | signature | formula |",
        "|---|---|---|---|---|",
    ]
    for d in opdefs:
        row = [
            f"[`{d.name}`](#{_anchor(d.name)})",
            d.category,
            str(d.version),
            f"`{signature(d)}`",
            _cell(_short(_doc(d))),
        ]
        lines.append("| " + " | ".join(row) + " |")
    for category in categories:
        lines += ["", f"## {category}"]
        for d in (d for d in opdefs if d.category == category):
            lines += ["", *op_section(d)]
    lines += ["", *tolerance_table(opdefs)]
    return "\n".join(lines) + "\n"


def tolerance_table(opdefs: Sequence[OpDef]) -> list[str]:
    """Which ops are held to which float bound (integer results are always bit-exact)."""
    lines = [
        "## Tolerance classes",
        "",
        "How close a pack's float result must be to the interpreter's; integer, bool and quantized",
        "results are bit-exact whatever the class. Formulas: [conformance.md](conformance.md).",
        "",
        "| class | bound | ops |",
        "|---|---|---|",
    ]
    classes = sorted({d.tolerance for d in opdefs})
    for cls in classes:
        key = cls if cls in TOLERANCE_CLASSES else re.sub(r"\d+$", "N", cls)
        names = ", ".join(f"`{d.name}`" for d in opdefs if d.tolerance == cls)
        lines.append(f"| `{cls}` | {_cell(TOLERANCE_CLASSES.get(key, ''))} | {names} |")
    return lines


def signature(d: OpDef) -> str:
    """``cast(x) {dtype: dtype}`` / ``clip(x) {min: float = -inf, ...}``."""
    text = f"{d.name}({', '.join(d.inputs)})"
    if d.attrs:
        text += " {" + ", ".join(_attr_sig(a) for a in d.attrs) + "}"
    if d.regions:
        text += " " + " ".join(f"region @{r}" for r in d.regions)
    return text


def op_section(d: OpDef) -> list[str]:
    lines = [
        f"### {d.name}",
        "",
        f"`{signature(d)}` → {_outputs(d)}",
        "",
        _doc(d),
        "",
        f"- **category:** {d.category} · **family:** {d.family} · **version:** {d.version}",
        f"- **input dtypes:** {_dtypes(d.dtypes)}",
        f"- **tolerance:** `{d.tolerance}` · **torch twin:** {'yes' if d.torch_twin else 'no'}",
    ]
    rules = list(dict.fromkeys(p.rule for p in d.conformance.grid))
    if rules:
        lines.append(f"- **conformance rules:** {', '.join(rules)}")
    if d.attrs:
        lines += ["", "| attribute | kind | default | doc |", "|---|---|---|---|"]
        for a in d.attrs:
            doc = a.doc + (
                f" (one of {', '.join(_value(c) for c in a.choices)})" if a.choices else ""
            )
            default = "required" if a.default is REQUIRED else f"`{_value(a.default)}`"
            lines.append(
                f"| `{a.name}` | {a.kind} ({ATTR_KINDS[a.kind]}) | {default} | {_cell(doc)} |"
            )
    return lines


def _attr_sig(a: Attr) -> str:
    if a.default is REQUIRED:
        return f"{a.name}: {a.kind}"
    return f"{a.name}: {a.kind} = {_value(a.default)}"


def _value(v: object) -> str:
    try:
        return format_attr_value(v)
    except Exception:  # a default the textual IR cannot show; fall back to Python's repr
        return repr(v)


def _outputs(d: OpDef) -> str:
    if d.regions:
        return "the results of its regions (see docs/ir.md, Control flow)"
    if d.num_outputs < 0:
        return "a variable number of outputs (decided by inference)"
    return "1 output" if d.num_outputs == 1 else f"{d.num_outputs} outputs"


def _dtypes(dtypes: Iterable[DType]) -> str:
    chosen = frozenset(dtypes)
    names = ", ".join(t.value for t in DType if t in chosen)
    return f"all ({names})" if chosen == ALL_DTYPES else names


def _doc(d: OpDef) -> str:
    return inspect.cleandoc(d.doc).strip() or "(no description)"


def _short(text: str, limit: int = 90) -> str:
    """The doc's first line, cut at a word boundary for the summary table."""
    first = text.split("\n", 1)[0]
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0] + " …"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9_\- ]", "", name.lower()).replace(" ", "-")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Generate docs/ops.md.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="file to write/check")
    args = parser.parse_args(argv)
    text = render_ops_markdown()
    path: Path = args.output
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            state = "missing" if current is None else "stale"
            print(f"{path} is {state}: run `{COMMAND}` and commit the result", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
