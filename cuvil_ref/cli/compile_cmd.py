"""``cuvil compile MODEL``: capture, optimize, partition and lower a model; report and save it.

Progress goes to stderr (a spinner on a terminal, one line per finished step), results to stdout,
so ``--report-json -`` can be piped.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from cuvil_ref.cli.models import capture, example_arrays, load_model
from cuvil_ref.cli.params import (
    KEY_VALUE,
    input_shape_option,
    options_dict,
    target_option,
    target_request,
)
from cuvil_ref.cli.render import (
    print_warning,
    render_report,
    stderr_console,
    stdout_console,
    to_json_text,
)
from cuvil_ref.errors import CuvilError


@contextlib.contextmanager
def step(console: Console, doing: str) -> Iterator[None]:
    """A spinner while ``doing`` runs, then ``done: <doing> (seconds)``; warnings shown as lines."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with console.status(doing):
            yield
    for w in caught:
        print_warning(str(w.message))
    console.print(Text(f"done: {doing} ({time.perf_counter() - t0:.2f} s)", style="dim"))


def dump_ir_passes(passes: str | None) -> list[str]:
    """The pass names of ``--dump-ir a,b`` (or ``all``), checked against the pass table."""
    if not passes:
        return []
    from cuvil_ref.passes import PASSES

    names = [p.strip() for p in passes.split(",") if p.strip()]
    unknown = [n for n in names if n != "all" and n not in PASSES]
    if unknown:
        raise CuvilError(
            f"--dump-ir: unknown pass {', '.join(map(repr, unknown))}; passes: "
            f"{', '.join(sorted(PASSES))}, or 'all'"
        )
    return names


@contextlib.contextmanager
def dump_ir_after(names: list[str]) -> Iterator[None]:
    """Set ``CUVIL_DUMP_IR`` for the pass manager while compiling (restored afterwards)."""
    if not names:
        yield
        return
    old = os.environ.get("CUVIL_DUMP_IR")
    os.environ["CUVIL_DUMP_IR"] = ",".join(names)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUVIL_DUMP_IR", None)
        else:
            os.environ["CUVIL_DUMP_IR"] = old


@click.command("compile")
@click.argument("model")
@input_shape_option()
@target_option(default=None)
@click.option("--target-spec", metavar="FILE", help="JSON target spec (instead of --target).")
@click.option("--quantize", type=click.Choice(["int8", "fp16", "bf16", "mixed"]))
@click.option("--calibration", metavar="FILE", help="Calibration data (.npy, or .npz per input).")
@click.option("--opt-level", "-O", type=click.IntRange(0, 3), default=2, show_default=True)
@click.option("--no-fusion", is_flag=True, help="Skip the fusion passes.")
@click.option("--no-layout-opt", is_flag=True, help="Skip the layout pass.")
@click.option(
    "--option",
    "option_pairs",
    type=KEY_VALUE,
    multiple=True,
    help="A target option, e.g. --option loop_unroll_factor=4 (repeatable).",
)
@click.option("--dynamic-batch", is_flag=True, help="Make dim 0 of every input symbolic.")
@click.option(
    "--capture",
    "capture_mode",
    type=click.Choice(["fx", "export"]),
    help="Capture path (default: fx; export for .pt2 files).",
)
@click.option("-o", "--output", metavar="FILE", help="Save the compiled module (.cuvilir).")
@click.option("--report", "show_report", is_flag=True, help="Print the compile report as tables.")
@click.option("--report-json", metavar="FILE", help="Write the report as JSON ('-' = stdout).")
@click.option("--dump-ir", metavar="PASS", help="Print the IR after these passes (comma list).")
@click.option("--no-cache", is_flag=True, help="Do not use the compile cache.")
@click.option(
    "--no-profile",
    is_flag=True,
    help="With --report: skip the one run on example inputs that fills the target metrics.",
)
def compile_command(
    model: str,
    input_shapes: tuple[tuple[int, ...], ...],
    target: str | None,
    target_spec: str | None,
    quantize: str | None,
    calibration: str | None,
    opt_level: int,
    no_fusion: bool,
    no_layout_opt: bool,
    option_pairs: tuple[tuple[str, Any], ...],
    dynamic_batch: bool,
    capture_mode: str | None,
    output: str | None,
    show_report: bool,
    report_json: str | None,
    dump_ir: str | None,
    no_cache: bool,
    no_profile: bool,
) -> None:
    """Compile MODEL: zoo:NAME, path/file.py:factory, a torch.export .pt2 file or model.onnx."""
    from cuvil_ref.lowering.compiler import compile_module

    request = target_request(target, target_spec)
    options = options_dict(option_pairs)
    dump_names = dump_ir_passes(dump_ir)
    if calibration and not quantize:
        raise click.UsageError("--calibration is only used with --quantize")
    err = stderr_console()
    with step(err, f"load {model}"):
        loaded = load_model(model)
    with step(err, "capture"):
        module = capture(loaded, input_shapes, capture_mode, dynamic_batch)
    calib = None
    if quantize == "int8":
        if calibration:
            from cuvil_ref.cli.arrays import calibration_batches

            calib = calibration_batches(calibration, module)
        else:
            print_warning(
                "no --calibration file: calibrating on one random batch; int8 accuracy needs "
                "representative data"
            )
            calib = [tuple(example_arrays(module))]
    with dump_ir_after(dump_names), step(err, "optimize, partition and lower"):
        program = compile_module(
            module,
            request,
            quantize=quantize,
            opt_level=opt_level,
            enable_fusion=not no_fusion,
            enable_layout_opt=not no_layout_opt,
            options=options or None,
            calibration_data=calib,
            cache=False if (no_cache or dump_ir) else None,
        )
    if (show_report or report_json) and not no_profile:
        # Device packs count cycles, bytes and energy while running: run once to report them.
        with step(err, "profile one run on example inputs"):
            program.run(list(calib[0]) if calib else example_arrays(module))
    report = program.report()
    plan = report["partitions"]
    click.echo(
        f"compiled {loaded.label} for target '{program.target.name}': "
        f"{len(program.module.graph.nodes)} nodes in {plan['count']} partition(s), "
        f"{len(plan['fallback'])} fallback node(s)"
    )
    if output:
        program.module.save(
            output,
            target=program.target.to_json(),
            options=dict(program.target.options),
            extra_meta={
                "compile": {
                    "model": loaded.label,
                    "quantize": quantize,
                    "opt_level": opt_level,
                    "fusion": not no_fusion,
                    "layout_opt": not no_layout_opt,
                }
            },
        )
        click.echo(f"saved {output}")
    if show_report:
        render_report(report, stdout_console())
    if report_json == "-":
        click.echo(to_json_text(report))
    elif report_json:
        with open(report_json, "w", encoding="utf-8") as f:
            f.write(to_json_text(report) + "\n")
