"""``cuvil-conformance run --target T``: run the suite with a progress bar and write reports.

Exit status: 0 when nothing failed or errored, every requested op has cases and the pack ran at
least one case; 1 otherwise;
2 for usage errors (unknown target, unknown op); 3 when the target is unavailable on this machine
(every case is then reported as unsupported — never as passed) unless --allow-unavailable.
"""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cuvil_conformance import report as reports
from cuvil_conformance.runner import CaseResult, run_suite
from cuvil_ref.errors import CuvilError
from cuvil_ref.ops import REGISTRY


@click.group()
@click.version_option(package_name="cuvil-conformance")
def main() -> None:
    """Cuvil conformance suite: checks a kernel pack against the reference interpreter."""


@main.command()
@click.option("--target", "-t", required=True, help="target name, alias or JSON spec file")
@click.option("--ops", default=None, help="comma-separated op names (default: every op)")
@click.option("--quick", is_flag=True, help="a small subset of cases per op")
@click.option("--models/--no-models", default=False, help="also run zoo model cases")
@click.option("--report-json", type=click.Path(dir_okay=False), default=None)
@click.option("--report-md", type=click.Path(dir_okay=False), default=None)
@click.option("--junit", type=click.Path(dir_okay=False), default=None)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None)
@click.option("--show", type=click.Choice(["failures", "all", "none"]), default="failures")
@click.option(
    "--allow-unavailable",
    is_flag=True,
    help="exit 0 when the target is unavailable on this machine (default: exit 3)",
)
def run(
    target: str,
    ops: str | None,
    quick: bool,
    models: bool,
    report_json: str | None,
    report_md: str | None,
    junit: str | None,
    html_path: str | None,
    show: str,
    allow_unavailable: bool,
) -> None:
    """Run the suite for TARGET.

    Exit status: 0 when every requested case passed or was declined by the pack and at least one
    case ran; 1 on failures, errors, ops without cases or when the pack claimed no case at all;
    2 on usage errors; 3 when the target is unavailable here
    (nothing ran), unless --allow-unavailable.
    """
    console = Console(stderr=True)
    op_list = [o.strip() for o in ops.split(",") if o.strip()] if ops else None
    for op in op_list or []:
        if op not in REGISTRY:
            console.print(f"[red]error:[/] unknown op '{op}' (see docs/ops.md)")
            sys.exit(2)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[case]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with progress:
        task = progress.add_task(f"conformance[{target}]", total=None, case="")

        def on_case(r: CaseResult, i: int, total: int) -> None:
            progress.update(task, completed=i, total=total, case=r.id[:50])

        try:
            report = run_suite(target, op_list, quick=quick, models=models, on_case=on_case)
        except CuvilError as exc:
            console.print(f"[red]error:[/] {exc}")
            sys.exit(2)
    s = report.summary()
    t = report.target
    if not t.get("available", True):
        console.print(f"[yellow]target '{t['target']}' is unavailable:[/] {t.get('reason')}")
    table = Table(title=f"cuvil-conformance: {t['target']} ({t.get('device') or 'n/a'})")
    for col in ("passed", "failed", "errors", "unsupported", "skipped", "total", "coverage"):
        table.add_column(col, justify="right")
    table.add_row(
        *(str(s[c]) for c in ("passed", "failed", "errors", "unsupported", "skipped", "total")),
        f"{s['coverage']:.1%}",
    )
    out = Console()
    out.print(table)
    if report.uncovered:
        out.print(f"[red]ops without cases:[/] {', '.join(report.uncovered)}")
    if t.get("available", True) and s["claimed"] == 0:
        out.print(
            f"[red]the pack ran none of the {s['total']} cases[/] (all unsupported or skipped): "
            "nothing was shown to conform; check --ops and the pack's cuvil_supports_node"
        )
    for r in report.results:
        if show == "all" or (show == "failures" and r.status in ("failed", "error")):
            out.print(f"{r.status.upper():<11} {r.id}: {r.reason}", markup=False)
    if report_json:
        reports.write_json(report, report_json)
    if report_md:
        reports.write_markdown(report, report_md)
    if junit:
        reports.write_junit(report, junit)
    if html_path:
        reports.write_html(report, html_path)
    if not t.get("available", True):
        sys.exit(0 if allow_unavailable else 3)
    sys.exit(0 if report.ok else 1)


@main.command()
@click.option("--target", "-t", required=True, help="target name, alias or JSON spec file")
@click.option("--seconds", type=float, default=60.0, show_default=True, help="time budget")
@click.option("--seed", type=int, default=0, show_default=True, help="replays the same graphs")
@click.option(
    "--mode",
    type=click.Choice(["pipeline", "torch"]),
    default="pipeline",
    show_default=True,
    help="pipeline: the target at every opt_level vs the interpreter at opt_level 0; "
    "torch: the interpreter vs PyTorch eager (ops with a torch twin)",
)
@click.option(
    "--save-dir",
    type=click.Path(file_okay=False),
    default="fuzz-failures",
    show_default=True,
    help="where shrunk failures are written as regression cases",
)
@click.option("--batch", type=int, default=25, show_default=True, help="examples per round")
@click.option(
    "--max-graphs",
    type=int,
    default=None,
    help="stop after this many graphs too (with --seed: the same graphs on any machine)",
)
def fuzz(
    target: str,
    seconds: float,
    seed: int,
    mode: str,
    save_dir: str,
    batch: int,
    max_graphs: int | None,
) -> None:
    """Differential graph fuzzing of TARGET (random well-typed graphs of registry ops).

    Exit status: 0 when no failure was found; 1 when some were (each shrunk and saved under
    --save-dir; copy it to conformance/tests/fuzz_regressions/ once fixed); 2 on usage errors;
    3 when the target is unavailable on this machine.
    """
    from cuvil_conformance.fuzz import run_fuzz
    from cuvil_ref.plugin.host import get_host

    console = Console(stderr=True)
    try:
        host = get_host()
        spec = host.resolve(target)
        avail = host.availability(spec)
    except CuvilError as exc:
        console.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    if not avail.available:
        console.print(f"[yellow]target '{spec.name}' is unavailable:[/] {avail.reason}")
        sys.exit(3)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with progress:
        task = progress.add_task(f"fuzz[{spec.name}, {mode}]", total=seconds, info="")

        def on_progress(r: Any) -> None:
            info = f"{r.examples} graphs, {len(r.failures)} failures"
            progress.update(task, completed=min(r.seconds, seconds), info=info)

        report = run_fuzz(
            spec.name,
            seconds,
            seed,
            mode,
            save_dir,
            batch=batch,
            on_progress=on_progress,
            max_examples=max_graphs,
        )
    out = Console()
    out.print(
        f"fuzz {spec.name} ({mode}, seed {seed}): {report.examples} graphs "
        f"({report.checked} checked) in {report.seconds:.0f} s, {len(report.ops_seen)} distinct "
        f"ops, {len(report.failures)} failures"
    )
    for ops, finding, path in report.failures:
        out.print(f"FAILED {ops}\n  {finding}\n  saved: {path}", markup=False)
    sys.exit(0 if report.ok else 1)


@main.command("list")
@click.option("--ops", default=None, help="comma-separated op names")
@click.option("--quick", is_flag=True)
def list_cases(ops: str | None, quick: bool) -> None:
    """List case ids (stable across runs and machines)."""
    from cuvil_conformance.generators import generate_cases

    cases, missing = generate_cases(ops.split(",") if ops else None, quick=quick)
    for c in cases:
        click.echo(c.id)
    if missing:
        click.echo(f"# ops without cases: {', '.join(missing)}", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
