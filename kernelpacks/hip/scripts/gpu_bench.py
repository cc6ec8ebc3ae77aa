"""GPU check of the hip pack: its conformance suite, then ResNet-18/50 at batch 1 and 32, fp32 and
fp16, as Cuvil ``hip`` (CUDA-graph replay) against torch eager CUDA and
``torch.compile(mode="reduce-overhead")``, in one run; writes JSON and Markdown.

Every measurement is in its own try block: a failure is recorded with its error and the run goes
on. ``--dry-run`` needs no GPU: it captures each model at a small size and runs only the planning
step (kernels, launches, arena), which is what the tests exercise.

Usage: python kernelpacks/hip/scripts/gpu_bench.py [--out DIR] [--dry-run] [--skip-conformance]
       [--models resnet18,resnet50] [--batches 1,32] [--dtypes fp32,fp16] [--iters 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[3]
for _path in (_REPO, _REPO / "kernelpacks" / "hip" / "src", _REPO / "conformance" / "src"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

DRY_RUN_SHAPE = (1, 3, 32, 32)
FULL_SIZE = 224


def attempt(record: dict[str, Any], key: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; on failure store ``"<key>_error"`` in ``record`` and return None."""
    try:
        return fn()
    except Exception as exc:  # one broken measurement must not stop the run
        record[f"{key}_error"] = f"{type(exc).__name__}: {exc}"
        record.setdefault("tracebacks", []).append(traceback.format_exc(limit=4))
        return None


def time_ms(fn: Callable[[], Any], sync: Callable[[], Any], warmup: int, iters: int) -> float:
    """Median milliseconds of ``fn`` over ``iters`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def plan_model(name: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """Planning-only summary of a zoo model for the hip target (no GPU needed)."""
    from cuvil_kernels_hip.executable import plan_metrics
    from cuvil_kernels_hip.lowered_sources import plan_graph, zoo_graph
    from cuvil_kernels_hip.plugin import support_reason

    graph = zoo_graph(name, shape)
    declined = [
        {"node": n.outputs[0].name, "op": n.op, "reason": r}
        for n in graph.nodes
        if (r := support_reason(n, graph)) is not None
    ]
    row: dict[str, Any] = {"model": name, "shape": list(shape), "nodes": len(graph.nodes)}
    row["declined"] = declined
    if not declined:
        plan = plan_graph(graph, {"loop_unroll_factor": 4}, ("tensor_core", "sm_90"))
        row.update(plan_metrics(plan))
        row["families"] = sorted({s.family for s in plan.sources})
    return row


def bench_one(name: str, batch: int, dtype: str, warmup: int, iters: int) -> dict[str, Any]:
    """One (model, batch, dtype) row: torch eager, torch.compile and cuvil hip timings."""
    import numpy as np
    import torch

    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.zoo import get_model

    row: dict[str, Any] = {"model": name, "batch": batch, "dtype": dtype}
    model, shape = get_model(name)
    shape = (batch, *shape[1:])
    tdtype = torch.float16 if dtype == "fp16" else torch.float32
    x_cpu = torch.randn(*shape)
    sync = torch.cuda.synchronize
    gpu_model = model.cuda().to(tdtype).eval()
    x_gpu = x_cpu.cuda().to(tdtype)
    with torch.inference_mode():
        want = attempt(row, "torch_eager", lambda: gpu_model(x_gpu).float().cpu().numpy())
        row["torch_eager_ms"] = attempt(
            row, "torch_eager", lambda: time_ms(lambda: gpu_model(x_gpu), sync, warmup, iters)
        )

        def compiled_ms() -> float:
            compiled = torch.compile(gpu_model, mode="reduce-overhead")
            return time_ms(lambda: compiled(x_gpu), sync, warmup + 3, iters)

        row["torch_compile_ms"] = attempt(row, "torch_compile", compiled_ms)

    def cuvil_program() -> Any:
        t0 = time.perf_counter()
        module = torch_to_cuvilir(model.float().cpu(), example_inputs=(x_cpu,))
        quant = "fp16" if dtype == "fp16" else None
        prog = compile_module(
            module, {"target": "hip", "options": {"use_graph": True}}, quantize=quant
        )
        row["cuvil_compile_s"] = round(time.perf_counter() - t0, 3)
        return prog

    prog = attempt(row, "cuvil_compile", cuvil_program)
    if prog is None:
        return row
    report = prog.report()
    row["cuvil_partitions"] = report["partitions"]["count"]
    row["cuvil_fallback"] = [f["op"] for f in report["partitions"]["fallback"]]
    x_np = x_cpu.numpy()
    got = attempt(row, "cuvil_run", lambda: prog.run([x_np])[0])
    if got is not None and want is not None:
        row["max_abs_diff_vs_torch"] = float(np.max(np.abs(got.astype(np.float32) - want)))
    row["cuvil_e2e_ms"] = attempt(
        row, "cuvil_e2e", lambda: time_ms(lambda: prog.run([x_np]), lambda: None, warmup, iters)
    )
    hip_parts = [lp.executable for lp in prog.lowered if lp.partition.target == "hip"]
    if len(hip_parts) == 1:
        ctx = hip_parts[0].context
        row["cuvil_device_ms"] = attempt(
            row, "cuvil_device", lambda: time_ms(ctx.launch, ctx.stream.synchronize, warmup, iters)
        )
        row["cuvil_metrics"] = attempt(row, "cuvil_metrics", hip_parts[0].metrics)
    return row


def run_conformance(out: Path, quick: bool) -> dict[str, Any]:
    from cuvil_conformance import report as reports
    from cuvil_conformance import run_suite

    suite = run_suite("hip", None, quick=quick)
    reports.write_json(suite, str(out / "hip_conformance.json"))
    reports.write_markdown(suite, str(out / "hip_conformance.md"))
    return suite.summary()


def to_markdown(result: dict[str, Any]) -> str:
    lines = [f"# hip pack GPU check ({result['mode']})", "", f"device: {result.get('device')}", ""]
    if "conformance" in result:
        lines += ["## Conformance", "", "```", json.dumps(result["conformance"], indent=1), "```"]
    if result.get("plans"):
        lines += [
            "",
            "## Planning (dry run)",
            "",
            "| model | shape | nodes | launches | kernels | arena bytes | declined |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in result["plans"]:
            lines.append(
                f"| {r['model']} | {r.get('shape')} | {r.get('nodes')} | {r.get('launches')} | "
                f"{r.get('unique_kernels')} | {r.get('arena_bytes')} | "
                f"{len(r.get('declined', []))} |"
            )
    if result.get("bench"):
        cols = ("torch_eager_ms", "torch_compile_ms", "cuvil_device_ms", "cuvil_e2e_ms")
        lines += [
            "",
            "## Benchmarks (median ms)",
            "",
            "| model | batch | dtype | " + " | ".join(cols) + " | max abs diff | errors |",
            "|---|---|---|" + "---|" * (len(cols) + 2),
        ]
        for r in result["bench"]:
            cells = [f"{r[c]:.3f}" if isinstance(r.get(c), float) else "-" for c in cols]
            errors = "; ".join(f"{k}: {v[:80]}" for k, v in r.items() if k.endswith("_error"))
            diff = r.get("max_abs_diff_vs_torch")
            lines.append(
                f"| {r['model']} | {r['batch']} | {r['dtype']} | "
                + " | ".join(cells)
                + f" | {diff if diff is not None else '-'} | {errors or '-'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "hip_gpu_results"))
    parser.add_argument("--dry-run", action="store_true", help="planning only; no GPU needed")
    parser.add_argument("--skip-conformance", action="store_true")
    parser.add_argument("--full-conformance", action="store_true", help="not only --quick cases")
    parser.add_argument("--models", default="resnet18,resnet50")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--dtypes", default="fp32,fp16")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from cuvil_ref.plugin.source_pack import use_source_pack

    host = use_source_pack("hip", "cuvil_kernels_hip.plugin")
    models = [m for m in args.models.split(",") if m]
    result: dict[str, Any] = {"mode": "dry-run" if args.dry_run else "gpu"}
    avail = host.availability(host.resolve("hip"))
    result["device"] = avail.device or f"unavailable: {avail.reason}"
    if args.dry_run:
        result["plans"] = [
            attempt(row := {"model": m}, "plan", lambda m=m: plan_model(m, DRY_RUN_SHAPE)) or row
            for m in models
        ]
    else:
        if not args.skip_conformance:
            result["conformance"] = attempt(
                result, "conformance", lambda: run_conformance(out, not args.full_conformance)
            )
        result["bench"] = []
        for m in models:
            for batch in (int(b) for b in args.batches.split(",")):
                for dtype in args.dtypes.split(","):
                    row = {"model": m, "batch": batch, "dtype": dtype}
                    got = attempt(
                        row,
                        "bench",
                        lambda m=m, b=batch, d=dtype: bench_one(m, b, d, args.warmup, args.iters),
                    )
                    result["bench"].append(got or row)
                    print(json.dumps(got or row, default=str)[:400], flush=True)
    (out / "hip_gpu_check.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "hip_gpu_check.md").write_text(to_markdown(result))
    print(to_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
