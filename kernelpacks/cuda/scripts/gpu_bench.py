"""GPU check of the ``cuda`` pack: conformance, then ResNet-18/50 vs torch, as JSON + Markdown.

Run on the GPU machine from the repository copy (nothing is pip-installed there)::

    python kernelpacks/cuda/scripts/gpu_bench.py --out "$OUT"
    NUMBA_ENABLE_CUDASIM=1 python kernelpacks/cuda/scripts/gpu_bench.py --dry-run --out /tmp/x

``--dry-run`` uses the simulator-sized plan (digits_cnn, batch 1, a few ops, one iteration) so the
script itself can be tested without a GPU. Every measurement is wrapped: a failure is recorded
with its error and the run goes on.
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

REPO = Path(__file__).resolve().parents[3]
for sub in ("", "kernelpacks/cuda/src", "conformance/src"):
    path = str(REPO / sub) if sub else str(REPO)
    if path not in sys.path:
        sys.path.insert(0, path)


def _error(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"[:2000]


def _time(fn: Callable[[], Any], warmup: int, iters: int, sync: Callable[[], None]) -> dict:
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "iters": iters}


def conformance(dry_run: bool) -> dict:
    try:
        from cuvil_conformance import run_suite
        from cuvil_kernels_cuda.lowering import LOWERINGS

        from cuvil_ref.ops import REGISTRY

        ops = sorted(op for op in LOWERINGS if op in REGISTRY)
        if dry_run:
            ops = ["relu", "add", "qadd"]
        t0 = time.perf_counter()
        report = run_suite("cuda", ops=ops, quick=dry_run)
        bad = [
            {"id": r.id, "status": r.status, "reason": r.reason}
            for r in report.results
            if r.status in ("failed", "error")
        ]
        return {"summary": report.summary(), "problems": bad, "seconds": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - recorded, the benchmarks still run
        return {"error": _error(exc)}


def bench_one(name: str, batch: int, precision: str, args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from cuvil_ref import frontend, zoo
    from cuvil_ref.lowering.compiler import compile_module

    row: dict[str, Any] = {"model": name, "batch": batch, "precision": precision}
    model, shape = zoo.get_model(name)
    x = torch.randn(batch, *shape[1:], generator=torch.Generator().manual_seed(0))
    gpu = torch.cuda.is_available()
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    ref_out = None
    try:
        tm = model.to("cuda" if gpu else "cpu")
        tx = x.to("cuda" if gpu else "cpu")
        if precision == "fp16":
            tm, tx = tm.half(), tx.half()
        with torch.inference_mode():
            ref_out = tm(tx).float().cpu().numpy()
            row["torch_eager"] = _time(lambda: tm(tx), args.warmup, args.iters, sync)
            row["torch_eager"]["device"] = "cuda" if gpu else "cpu"
    except Exception as exc:  # noqa: BLE001
        row["torch_eager"] = {"error": _error(exc)}
    try:
        if args.dry_run and not gpu:
            raise RuntimeError("skipped in --dry-run without a GPU (torch.compile is slow on CPU)")
        compiled = torch.compile(tm, mode="reduce-overhead")
        with torch.inference_mode():
            row["torch_compile"] = _time(lambda: compiled(tx), args.warmup + 2, args.iters, sync)
    except Exception as exc:  # noqa: BLE001
        row["torch_compile"] = {"error": _error(exc)}
    try:
        t0 = time.perf_counter()
        module = frontend.torch_to_cuvilir(model.float().cpu(), example_inputs=(x,))
        options = {"use_cuda_graph": args.cuda_graph}
        quantize = "fp16" if precision == "fp16" else None
        prog = compile_module(module, "cuda", quantize=quantize, options=options, cache=False)
        compile_s = time.perf_counter() - t0
        xin = x.numpy()
        if quantize == "fp16" and prog.module.graph.inputs[0].type.dtype.value == "f16":
            xin = xin.astype(np.float16)
        out = prog.run([xin])[0]
        row["cuvil"] = _time(lambda: prog.run([xin]), args.warmup, args.iters, lambda: None)
        report = prog.report()
        row["cuvil"].update(
            {
                "compile_s": compile_s,
                "partitions": [p["target"] for p in report["partitions"]["partitions"]],
                "fallback": report["partitions"]["fallback"][:20],
                "metrics": report["metrics"],
            }
        )
        if ref_out is not None:
            row["cuvil"]["max_abs_diff_vs_torch"] = float(
                np.abs(np.asarray(out, np.float32) - ref_out).max()
            )
    except Exception as exc:  # noqa: BLE001
        row["cuvil"] = {"error": _error(exc)}
    return row


def markdown(results: dict) -> str:
    lines = [f"# cuda pack GPU check ({results['device']})", ""]
    conf = results["conformance"]
    if "summary" in conf:
        s = conf["summary"]
        lines.append(
            f"Conformance: {s['passed']} passed, {s['failed']} failed, {s['errors']} errors, "
            f"{s['unsupported']} unsupported of {s['total']} ({conf['seconds']:.0f} s)."
        )
    else:
        lines.append(f"Conformance: error: {conf.get('error')}")
    lines += ["", "| model | batch | precision | cuvil ms | torch eager ms | torch.compile ms |"]
    lines.append("|---|---|---|---|---|---|")

    def cell(d: dict) -> str:
        return f"{d['median_ms']:.3f}" if "median_ms" in d else "error"

    for r in results["benchmarks"]:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['precision']} | {cell(r.get('cuvil', {}))} | "
            f"{cell(r.get('torch_eager', {}))} | {cell(r.get('torch_compile', {}))} |"
        )
    errors = [
        f"- {r['model']} b{r['batch']} {r['precision']} {k}: {r[k]['error']}"
        for r in results["benchmarks"]
        for k in ("cuvil", "torch_eager", "torch_compile")
        if isinstance(r.get(k), dict) and "error" in r[k]
    ]
    return "\n".join(lines + (["", "Errors:", *errors] if errors else [])) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "gpu_results"))
    p.add_argument("--dry-run", action="store_true", help="tiny plan for the simulator")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--cuda-graph", action="store_true", help="compile with use_cuda_graph=True")
    p.add_argument("--skip-conformance", action="store_true")
    args = p.parse_args(argv)
    if args.dry_run:
        args.iters, args.warmup = 1, 1
        plan = [("digits_cnn", 1, "fp32")]
    else:
        plan = [
            (m, b, prec)
            for m in ("resnet18", "resnet50")
            for b in (1, 32)
            for prec in ("fp32", "fp16")
        ]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from cuvil_kernels_cuda.device import availability

    from cuvil_ref.plugin.source_pack import use_source_pack

    use_source_pack("cuda", "cuvil_kernels_cuda.plugin")  # nothing pip-installed there

    results: dict[str, Any] = {"device": availability()[1], "dry_run": args.dry_run}
    results["conformance"] = {} if args.skip_conformance else conformance(args.dry_run)
    (out / "cuda_results.json").write_text(json.dumps(results, indent=2, default=str))
    results["benchmarks"] = []
    for name, batch, prec in plan:
        try:
            row = bench_one(name, batch, prec, args)
        except Exception as exc:  # noqa: BLE001
            row = {"model": name, "batch": batch, "precision": prec, "error": _error(exc)}
        results["benchmarks"].append(row)
        print(json.dumps(row, default=str)[:400], flush=True)
        (out / "cuda_results.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "cuda_results.md").write_text(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
