"""``cuvil pack new NAME``: scaffold a kernel-pack project."""

from __future__ import annotations

import click


@click.group()
def pack() -> None:
    """Kernel-pack authoring tools."""


@pack.command("new")
@click.argument("name")
@click.option("--dest", default=".", show_default=True, help="Folder to create the project in.")
def new(name: str, dest: str) -> None:
    """Create a kernel pack for target NAME: a renamed copy of the tested example pack."""
    from cuvil_ref.plugin.scaffold import scaffold_pack

    root = scaffold_pack(name, dest)
    click.echo(f"created kernel pack '{name}' in {root}")
    click.echo(f"next: pip install -e {root} && cuvil targets && pytest {root / 'tests'}")
