"""``cuvil inspect FILE``: an artifact's meta, summary, op histogram, memory plan, graph exports."""

from __future__ import annotations

from typing import Any

import click

from cuvil_ref.cli.render import (
    echo_json,
    format_bytes,
    kv_table,
    memory_table,
    stdout_console,
    table,
)
from cuvil_ref.ir.graph import Module


def module_summary(module: Module) -> dict[str, Any]:
    g = module.graph
    return {
        "name": module.name,
        "inputs": [{"name": v.name, "type": str(v.type)} for v in g.inputs],
        "outputs": [{"name": v.name, "type": str(v.type)} for v in g.outputs],
        "nodes": len(g.nodes),
        "constants": len(g.constants),
        "weight_bytes": int(sum(a.nbytes for a in g.constants.values())),
        "metadata": {k: v for k, v in module.metadata.items()},
    }


def _write(text: str, dest: str) -> None:
    if dest == "-":
        click.echo(text, nl=False)
    else:
        with open(dest, "w", encoding="utf-8") as f:
            f.write(text)


@click.command("inspect")
@click.argument("file")
@click.option("--text", "show_text", is_flag=True, help="Print the textual IR.")
@click.option("--dot", metavar="FILE", help="Write the graph as Graphviz dot ('-' = stdout).")
@click.option("--mermaid", metavar="FILE", help="Write the graph as Mermaid ('-' = stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print meta, summary, ops, memory as JSON.")
def inspect_command(
    file: str, show_text: bool, dot: str | None, mermaid: str | None, as_json: bool
) -> None:
    """Show what a .cuvilir artifact holds (its digests are verified first)."""
    from cuvil_ref.artifacts import artifact_info, load_module
    from cuvil_ref.cli.graph_render import to_dot, to_mermaid
    from cuvil_ref.passes import plan_memory

    info = artifact_info(file)
    module = load_module(file)
    summary = module_summary(module)
    ops = module.graph.op_histogram()
    memory = plan_memory(module.graph).report()
    if dot:
        _write(to_dot(module.graph, module.name), dot)
    if mermaid:
        _write(to_mermaid(module.graph), mermaid)
    if as_json:
        echo_json({"meta": info, "summary": summary, "ops": ops, "memory": memory})
        return
    if show_text:
        click.echo(str(module), nl=False)
    if "-" in (dot, mermaid) and not show_text:
        return  # stdout carries the graph text only, so it can be piped to `dot`
    out = stdout_console()
    compile_meta = info.get("compile") or {}
    target = info.get("target")
    out.print(
        kv_table(
            f"artifact {file}",
            {
                "module": info.get("module"),
                "format version": info.get("format_version"),
                "cuvil version": info.get("cuvil_version"),
                "created": info.get("created"),
                "target": target.get("target") if isinstance(target, dict) else target,
                "options": info.get("options") or None,
                "compiled from": compile_meta.get("model"),
                "quantize": compile_meta.get("quantize"),
                "signed": bool(info.get("signed")),
                "size": format_bytes(sum(info.get("members", {}).values())),
            },
        )
    )
    out.print(
        kv_table(
            "module",
            {
                "inputs": [f"%{v['name']}: {v['type']}" for v in summary["inputs"]],
                "outputs": [v["type"] for v in summary["outputs"]],
                "nodes": summary["nodes"],
                "constants": summary["constants"],
                "weights": format_bytes(summary["weight_bytes"]),
            },
        )
    )
    rows = sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
    out.print(table("ops", ("op", "count"), rows))
    out.print(memory_table(memory))
