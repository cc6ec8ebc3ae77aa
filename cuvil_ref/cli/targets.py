"""``cuvil targets`` (installed targets and broken packs) and ``cuvil ops`` (the op registry)."""

from __future__ import annotations

import click
from rich.text import Text

from cuvil_ref.cli.render import echo_json, stdout_console, table, yes_no
from cuvil_ref.errors import CuvilError


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def targets(as_json: bool) -> None:
    """List installed targets, their kernel pack and availability, and packs that failed."""
    from cuvil_ref.plugin.host import list_targets

    rows = list_targets()
    if as_json:
        echo_json(rows)
        return
    console = stdout_console()
    good = [r for r in rows if r["target"] is not None]
    broken = [r for r in rows if r["target"] is None]
    console.print(
        table(
            "targets",
            ("target", "pack", "version", "available", "device / reason", "aliases"),
            (
                (
                    r["target"],
                    r["pack"],
                    r["version"],
                    yes_no(r["available"]),
                    r["device"] if r["available"] else r["reason"],
                    r["aliases"],
                )
                for r in good
            ),
        )
    )
    if broken:
        console.print(
            table(
                "broken packs (their targets are not available)",
                ("pack", "version", "module", "error"),
                (
                    (r["pack"], r["version"], r["description"], Text(r["error"], style="red"))
                    for r in broken
                ),
            )
        )


@click.command()
@click.option("--category", "-c", help="Only ops of this category (e.g. conv, elementwise).")
@click.option("--json", "as_json", is_flag=True, help="Print name, category, version, signature.")
def ops(category: str | None, as_json: bool) -> None:
    """List the registered ops with their signatures."""
    from cuvil_ref.docs_gen import signature
    from cuvil_ref.ops import REGISTRY

    opdefs = sorted(REGISTRY, key=lambda d: (d.category, d.name))
    categories = sorted({d.category for d in opdefs})
    if category is not None:
        if category not in categories:
            raise CuvilError(f"no op category {category!r}; categories: {', '.join(categories)}")
        opdefs = [d for d in opdefs if d.category == category]
    if as_json:
        echo_json(
            [
                {
                    "op": d.name,
                    "category": d.category,
                    "version": d.version,
                    "signature": signature(d),
                }
                for d in opdefs
            ]
        )
        return
    stdout_console().print(
        table(
            f"ops ({len(opdefs)})",
            ("op", "category", "version", "signature"),
            ((d.name, d.category, d.version, signature(d)) for d in opdefs),
        )
    )
