"""``cuvil bench FILE|MODEL``: latency percentiles of a compiled program (and of torch eager).

Inputs are random arrays of the module's input types (fixed seed). Each measured call is timed
with ``time.perf_counter``; warmup calls are not measured. ``--per-layer`` adds the target's
own per-layer timings (``cm.report()["metrics"]["layers"]``, e.g. the ``cpu`` pack's milliseconds,
share and algorithm per step), slowest first, for targets that record them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import click
import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cuvil_ref.cli.models import capture, example_arrays, is_artifact, load_model
from cuvil_ref.cli.params import input_shape_option, target_option
from cuvil_ref.cli.render import echo_json, stderr_console, stdout_console, table
from cuvil_ref.errors import CuvilError


def latency_stats(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and mean in milliseconds, plus the number of calls."""
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    return {
        "p50_ms": float(p50),
        "p90_ms": float(p90),
        "p99_ms": float(p99),
        "mean_ms": float(ms.mean()),
        "iters": int(ms.size),
    }


def measure(fn: Callable[[], Any], label: str, warmup: int, iters: int) -> dict[str, float]:
    """Run ``fn`` ``warmup`` times, then time it ``iters`` times under a progress bar (stderr)."""
    console = stderr_console()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,  # a log file gets no bar redraws
    )
    times: list[float] = []
    with progress:
        task = progress.add_task(label, total=warmup + iters)
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if i >= warmup:
                times.append(dt)
            progress.advance(task)
    return latency_stats(times)


@click.command("bench")
@click.argument("source", metavar="FILE|MODEL")
@input_shape_option()
@target_option()
@click.option("--warmup", type=click.IntRange(0), default=3, show_default=True)
@click.option("--iters", type=click.IntRange(1), default=20, show_default=True)
@click.option("--capture", "capture_mode", type=click.Choice(["fx", "export"]))
@click.option(
    "--per-layer",
    is_flag=True,
    help="Also show the target's per-layer timings, slowest first (targets that record them).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def bench_command(
    source: str,
    input_shapes: tuple[tuple[int, ...], ...],
    target: str,
    warmup: int,
    iters: int,
    capture_mode: str | None,
    per_layer: bool,
    as_json: bool,
) -> None:
    """Benchmark a .cuvilir artifact or a model (zoo:NAME, file.py:factory, file.pt2)."""
    from cuvil_ref.lowering.compiler import compile_module

    eager = None
    if is_artifact(source):
        from cuvil_ref.artifacts import load_module

        module = load_module(source)
        arrays = _artifact_inputs(module, input_shapes)
        label = source
    else:
        loaded = load_model(source)
        module = capture(loaded, input_shapes, capture_mode)
        arrays = example_arrays(module)
        eager = loaded.model
        label = loaded.label
    program = compile_module(module, target)
    results = {
        f"cuvil ({program.target.name})": measure(
            lambda: program.run(arrays), f"cuvil {program.target.name}", warmup, iters
        )
    }
    if eager is not None:
        import torch

        tensors = [torch.from_numpy(a) for a in arrays]

        def run_eager() -> None:
            with torch.inference_mode():
                eager(*tensors)

        results["torch eager"] = measure(run_eager, "torch eager", warmup, iters)
    layers = _layers(program.report().get("metrics") or {}) if per_layer else None
    if as_json:
        out: dict[str, Any] = {"model": label, "target": program.target.name, "results": results}
        if layers is not None:
            out["layers"] = layers
        echo_json(out)
        return
    base = results.get("torch eager")
    rows = []
    for name, r in results.items():
        vs = f"{base['p50_ms'] / r['p50_ms']:.2f}x" if base and r["p50_ms"] > 0 else "-"
        rows.append((name, r["p50_ms"], r["p90_ms"], r["p99_ms"], r["mean_ms"], r["iters"], vs))
    stdout_console().print(
        table(
            f"latency of {label} (ms)",
            ("runner", "p50", "p90", "p99", "mean", "iters", "speed vs eager (p50)"),
            rows,
        )
    )
    if layers is not None:
        _print_layers(layers, program.target.name)


def _layers(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-layer rows of every partition that records them, slowest first."""
    found: list[dict[str, Any]] = []
    if isinstance(metrics.get("layers"), list):
        found.extend(metrics["layers"])
    else:
        for sub in (metrics.get("partitions") or metrics).values():
            if isinstance(sub, dict) and isinstance(sub.get("layers"), list):
                found.extend(sub["layers"])
    timed = [r for r in found if isinstance(r, dict) and isinstance(r.get("ms"), (int, float))]
    return sorted(timed, key=lambda r: -float(r["ms"]))


def _print_layers(layers: list[dict[str, Any]], target: str) -> None:
    if not layers:
        stdout_console().print(f"target {target!r} records no per-layer timings")
        return
    cols = [k for k in ("node", "op", "algorithm", "ms", "share", "gflops")
            if any(k in r for r in layers)]  # fmt: skip
    heads = {"gflops": "GFLOP/s"}
    stdout_console().print(
        table(
            f"per layer on {target} (mean over the runs, slowest first)",
            [heads.get(k, k) for k in cols],
            [[r.get(k, "") for k in cols] for r in layers],
        )
    )


def _artifact_inputs(module: Any, input_shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Random inputs for an artifact; ``--input-shape`` binds its symbolic dims."""
    if not input_shapes:
        return example_arrays(module)
    if len(input_shapes) != len(module.inputs):
        raise CuvilError(
            f"{len(input_shapes)} --input-shape given, the module has {len(module.inputs)} inputs"
        )
    bindings: dict[str, int] = {}
    for v, shape in zip(module.inputs, input_shapes):
        want = v.type.shape
        if len(shape) != len(want) or any(
            isinstance(w, int) and w != s for w, s in zip(want, shape)
        ):
            raise CuvilError(
                f"--input-shape {','.join(map(str, shape))} does not fit input %{v.name} of type "
                f"{v.type}"
            )
        bindings.update({w: s for w, s in zip(want, shape) if isinstance(w, str)})
    return example_arrays(module, bindings=bindings)
