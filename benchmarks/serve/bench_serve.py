"""Serving benchmarks for ``cuvil serve`` -- one command, re-runnable, results as JSON + Markdown.

    python benchmarks/serve/bench_serve.py --out bench-serve      # about 6 minutes

Measures, on loopback, each against its comparison in the same run:

1. per-request overhead of the server over a direct ``cm(x)`` call (the brief's MLP; one
   sequential client, HTTP binary and gRPC, batching window 0);
2. the brief's section 3.3 table: request batch size -> average latency and throughput (an MLP
   of width 2048, one sequential client, so the batch is exactly the request);
3. dynamic batching on GEMM-bound models (MLPs of width 2048 and 4096) under the same locust
   load: batch-1 serving (``max_batch_size`` 0) vs dynamic batching -- throughput and P99;
4. the batcher's own cost on a tiny model (the brief's MLP): one sequential client, batching
   off vs on (window 0), per request;
5. 1 vs 2 instances (execution contexts) on the width-2048 MLP, batch-1 serving;
6. a 60 s load at the highest rate the machine sustains: with Debian's ``wrk`` (C; it leaves
   the cores to the server) closed-loop connections at the best level of a short sweep; with
   locust only, the users level with the best throughput in a sweep, each user paced so that
   together they offer 80 % of that rate (a saturated locust on these 2 cores times its own
   wait for a core): failed requests, client P99 and -- when Debian's
   ``prometheus`` is installed -- the server's outcomes and the P99 a real Prometheus computes
   from the server's histogram over exactly the soak's window (``soak_window.py``);
7. where the limit is: server CPU per core, instance busy fraction and compute share during the
   batch-1 and batched runs, plus a py-spy profile of the server when py-spy is installed.

The load generator shares the machine with the server (2 cores here), so absolute rates are a
floor; the ratios in the same run are the result.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from soak_window import soak_with_prometheus  # noqa: E402

#: Share of the sweep's best closed-loop rate that the 60 s soak offers (paced users).
SOAK_SHARE = 0.8

NAMES = {"inputs": [{"name": "INPUT0"}], "outputs": [{"name": "OUTPUT0"}]}


def wide_mlp(width: int = 2048):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
        nn.Linear(width, 10),
    ).eval()  # fmt: skip


def compile_models() -> dict[str, Any]:
    import torch

    import cuvil_ref as cuvil
    from cuvil_ref.zoo import get_model

    tiny, _ = get_model("mlp")
    out = {
        "tiny": cuvil.torch.compile(
            tiny, example_inputs=(torch.randn(1, 784),), dynamic_batch=True
        ),
        "wide": cuvil.torch.compile(
            wide_mlp(), example_inputs=(torch.randn(1, 2048),), dynamic_batch=True
        ),
        "wider": cuvil.torch.compile(
            wide_mlp(4096), example_inputs=(torch.randn(1, 4096),), dynamic_batch=True
        ),
    }
    return out


def make_repo(root: Path, name: str, cm: Any, **config: Any) -> Path:
    from cuvil_ref.serve.repository import add_model

    repo = root / f"repo-{name}-{len(list(root.iterdir()))}"
    add_model(repo, name, cm, **NAMES, **config)
    return repo


def scrape(metrics: str) -> dict[str, float]:
    """Totals of a few families from the server's /metrics (summed over labels)."""
    text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10).read().decode()
    want = {
        "cuvil_compute_duration_seconds_sum", "cuvil_compute_duration_seconds_count",
        "cuvil_batch_size_sum", "cuvil_batch_size_count", "process_cpu_seconds_total",
        "cuvil_instance_busy_seconds_total", "cuvil_request_duration_seconds_sum",
        "cuvil_request_duration_seconds_count",
    }  # fmt: skip
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{")[0].split(" ")[0]
        if name in want:
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def sequential(host: str, model: str, x: np.ndarray, n: int, protocol: str = "http") -> list[float]:
    """Latencies (s) of n back-to-back requests from one tritonclient."""
    if protocol == "http":
        import tritonclient.http as tc

        client = tc.InferenceServerClient(host)
        inp = tc.InferInput("INPUT0", list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        outs = [tc.InferRequestedOutput("OUTPUT0", binary_data=True)]
    else:
        import tritonclient.grpc as tc  # type: ignore[no-redef]

        client = tc.InferenceServerClient(host)
        inp = tc.InferInput("INPUT0", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        outs = [tc.InferRequestedOutput("OUTPUT0")]
    for _ in range(max(3, n // 10)):
        client.infer(model, [inp], outputs=outs)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client.infer(model, [inp], outputs=outs)
        times.append(time.perf_counter() - t)
    return times


def direct(cm: Any, x: np.ndarray, n: int) -> list[float]:
    for _ in range(max(3, n // 10)):
        cm(x)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        cm(x)
        times.append(time.perf_counter() - t)
    return times


def ms(v: float) -> float:
    return round(v * 1e3, 3)


def serve(repo: Path, *args: str):
    from cuvil_ref.serve.process import ServerProcess

    return ServerProcess(repo, "--access-log", "", *args).start()


def load(
    server: Any,
    model: str,
    shape: tuple[int, ...],
    users: int,
    seconds: float,
    out: Path,
    rate: float = 0.0,
    generator: str = "locust",
) -> dict[str, Any]:
    from cuvil_ref.serve.loadgen import run_locust, run_wrk

    before = scrape(server.metrics)
    t0 = time.monotonic()
    if generator == "wrk":
        stats = run_wrk(
            server.http, connections=users, seconds=seconds, out_dir=out, model=model,
            shape=shape,
        )  # fmt: skip
    else:
        stats = run_locust(
            server.http, users=users, seconds=seconds, out_dir=out, model=model, shape=shape,
            rate=rate,
        )  # fmt: skip
    wall = time.monotonic() - t0
    after = scrape(server.metrics)
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    batches = d.get("cuvil_batch_size_count", 0.0) or 1.0
    stats.update(
        mean_batch=round(d.get("cuvil_batch_size_sum", 0.0) / batches, 2),
        server_cpu_cores=round(d.get("process_cpu_seconds_total", 0.0) / wall, 2),
        instance_busy=round(d.get("cuvil_instance_busy_seconds_total", 0.0) / wall, 2),
        compute_ms_per_batch=round(
            1e3 * d.get("cuvil_compute_duration_seconds_sum", 0.0) / batches, 3
        ),
    )
    return stats


def profile(
    server: Any, model: str, shape: tuple[int, ...], users: int, out: Path
) -> dict[str, Any] | None:
    """py-spy samples of the server under load, grouped by where the time goes."""
    spy = shutil.which("py-spy")
    if spy is None:
        return None
    from cuvil_ref.serve.loadgen import run_locust

    raw = out / f"profile-{model}.txt"
    rec = subprocess.Popen(
        [spy, "record", "--pid", str(server.proc.pid), "--duration", "10", "--format", "raw",
         "--threads", "--nonblocking", "--output", str(raw)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    run_locust(server.http, users=users, seconds=11, out_dir=out, model=model, shape=shape)
    rec.wait(60)
    if not raw.exists():
        return None
    groups = {
        "compute (numpy/BLAS in the executor threads)": ("run_sync", "cuvil-exec"),
        "HTTP (uvicorn, httptools, starlette)": ("uvicorn", "httptools", "starlette"),
        "protocol decode/encode (json, tensors)": ("json", "tensors.py", "http_api.py"),
        "batcher and manager (asyncio)": ("batcher.py", "manager.py", "asyncio"),
        "telemetry (spans, access log)": ("opentelemetry", "telemetry.py", "logging"),
        "prometheus_client": ("prometheus_client",),
    }
    counts = {g: 0 for g in groups}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit() or "idle" in stack.lower():
            continue
        total += int(n)
        leafward = stack.split(";")
        for g, keys in groups.items():
            if any(k in frame for frame in leafward[-6:] + leafward[:2] for k in keys):
                counts[g] += int(n)
                break
    return {"samples": total, "shares": {g: round(c / max(1, total), 3) for g, c in counts.items()}}


def batching(
    work: Path, out: Path, cm: Any, width: int, args: Any, instances: bool
) -> dict[str, Any]:
    """Batch-1 serving vs dynamic batching (and 1 vs 2 instances) of an MLP under locust."""
    configs = {
        "batch1_1inst": {"max_batch_size": 0, "dynamic_batching": {"max_queue_size": 256}},
        "batch1_2inst": {"max_batch_size": 0, "instance_count": 2,
                         "dynamic_batching": {"max_queue_size": 256}},
        "dynamic_1inst": {"max_batch_size": 16,
                          "dynamic_batching": {"max_queue_delay_us": 2000, "max_queue_size": 256}},
    }  # fmt: skip
    if not instances:
        del configs["batch1_2inst"]
    runs: dict[str, Any] = {"width": width}
    for label, cfg in configs.items():
        s = serve(make_repo(work, "wide", cm, **cfg))
        try:
            runs[label] = load(s, "wide", (1, width), args.batch_users, args.seconds, out)
            if instances and label in ("batch1_1inst", "dynamic_1inst"):
                runs[label]["profile"] = profile(s, "wide", (1, width), args.batch_users, out)
        finally:
            s.stop()
        print(f"width {width}", label, runs[label], flush=True)
    b1, dyn = runs["batch1_1inst"], runs["dynamic_1inst"]
    runs["speedup_dynamic_vs_batch1"] = round(dyn["rps"] / max(b1["rps"], 1e-9), 2)
    runs["p99_dynamic_le_batch1"] = dyn["p99_ms"] <= b1["p99_ms"]
    if instances:
        two = runs["batch1_2inst"]["rps"]
        runs["speedup_2inst_vs_1inst"] = round(two / max(b1["rps"], 1e-9), 2)
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default="bench-serve", help="folder for JSON, Markdown, CSVs")
    ap.add_argument("--seconds", type=float, default=20, help="each comparison load run")
    ap.add_argument("--soak", type=float, default=60, help="the sustained load run")
    ap.add_argument("--users", type=int, default=8, help="locust users, tiny-model comparison")
    ap.add_argument(
        "--batch-users", type=int, default=32,
        help="locust users, batch-1 vs dynamic batching on the MLP 2048 (a closed loop of N "
        "users never offers a batch larger than N)",
    )  # fmt: skip
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cuvil-bench-serve-"))
    from threadpoolctl import threadpool_limits

    # The server runs one BLAS thread per process (--blas-threads 1); direct cm(x) gets the same.
    blas = threadpool_limits(limits=1, user_api="blas")  # noqa: F841
    models = compile_models()
    rng = np.random.default_rng(0)
    tiny_x = rng.standard_normal((1, 784)).astype(np.float32)
    load1 = __import__("os").getloadavg()[0]
    res: dict[str, Any] = {
        "machine": f"{__import__('os').cpu_count()} cores, load average {load1:.2f} at the start"
    }

    # 1. overhead over cm(x) and 4. the batcher's own cost (tiny model, one sequential client)
    n = 400
    d = direct(models["tiny"], tiny_x, n)
    row = {"direct_cm_ms": ms(statistics.median(d))}
    for label, cfg in (
        ("unbatched", {"max_batch_size": 0}),
        ("batcher_window0", {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_us": 0}}),
    ):
        s = serve(make_repo(work, "tiny", models["tiny"], **cfg))
        try:
            row[f"http_{label}_ms"] = ms(statistics.median(sequential(s.http, "tiny", tiny_x, n)))
            row[f"grpc_{label}_ms"] = ms(
                statistics.median(sequential(s.grpc, "tiny", tiny_x, n, "grpc"))
            )
        finally:
            s.stop()
    row["http_overhead_ms"] = round(row["http_unbatched_ms"] - row["direct_cm_ms"], 3)
    row["grpc_overhead_ms"] = round(row["grpc_unbatched_ms"] - row["direct_cm_ms"], 3)
    row["batcher_cost_http_ms"] = round(
        row["http_batcher_window0_ms"] - row["http_unbatched_ms"], 3
    )
    row["batcher_cost_grpc_ms"] = round(
        row["grpc_batcher_window0_ms"] - row["grpc_unbatched_ms"], 3
    )
    res["overhead_tiny"] = row
    print("overhead", row, flush=True)

    # 2. section 3.3 table: batch size -> latency, throughput (width-2048 MLP)
    s = serve(make_repo(work, "wide", models["wide"], max_batch_size=16,
                        dynamic_batching={"max_queue_delay_us": 0}))  # fmt: skip
    table = []
    try:
        for b in (1, 4, 8, 16):
            xb = rng.standard_normal((b, 2048)).astype(np.float32)
            t = sequential(s.http, "wide", xb, 60)
            dt = direct(models["wide"], xb, 60)
            table.append(
                {
                    "batch": b,
                    "served_avg_ms": ms(statistics.mean(t)),
                    "served_rows_per_s": round(b / statistics.mean(t), 1),
                    "direct_avg_ms": ms(statistics.mean(dt)),
                    "direct_rows_per_s": round(b / statistics.mean(dt), 1),
                }
            )
    finally:
        s.stop()
    res["batch_table_wide"] = table
    print("table", table, flush=True)

    # 3. dynamic batching vs batch-1 serving, and 5. instances, under the same load
    res["batching_wide"] = batching(work, out, models["wide"], 2048, args, instances=True)
    res["batching_wider"] = batching(work, out, models["wider"], 4096, args, instances=False)

    # tiny model under load: batching on vs off (what batching costs where it cannot pay)
    tiny_runs = {}
    for label, cfg in (
        ("batch1", {"max_batch_size": 0, "dynamic_batching": {"max_queue_size": 256}}),
        ("dynamic", {"max_batch_size": 16,
                     "dynamic_batching": {"max_queue_delay_us": 500, "max_queue_size": 256}}),
    ):  # fmt: skip
        s = serve(make_repo(work, "tiny", models["tiny"], **cfg))
        try:
            tiny_runs[label] = load(s, "tiny", (1, 784), args.users, args.seconds, out)
        finally:
            s.stop()
        print("tiny", label, tiny_runs[label], flush=True)
    res["batching_tiny"] = tiny_runs

    # 6. sustained load at the best users level (tiny model, dynamic batching)
    cfg = {"max_batch_size": 16,
           "dynamic_batching": {"max_queue_delay_us": 500, "max_queue_size": 1024}}  # fmt: skip
    s = serve(make_repo(work, "tiny", models["tiny"], **cfg))
    try:
        # wrk (C) when installed: closed-loop connections at the best level of a sweep. With
        # locust only, the soak offers SOAK_SHARE of the best closed-loop rate, paced: at
        # saturation locust, on the same two cores, measures its own wait for a core.
        gen = "wrk" if shutil.which("wrk") else "locust"
        levels = (1, 2, 4, 8, 16, 32) if gen == "wrk" else (1, 2, 4, 8, 16)
        sweep = {u: load(s, "tiny", (1, 784), u, 6, out, generator=gen)["rps"] for u in levels}
        best = max(sweep, key=sweep.get)
        per_user = SOAK_SHARE * sweep[best] / best if gen == "locust" else 0.0

        def soak():
            return load(s, "tiny", (1, 784), best, args.soak, out, rate=per_user, generator=gen)

        soaked = soak_with_prometheus(s, work, soak) or soak()
        soaked["sweep_rps"] = sweep
    finally:
        s.stop()
    res["soak_tiny"] = soaked
    print("soak", soaked, flush=True)

    (out / "bench_serve.json").write_text(json.dumps(res, indent=2))
    (out / "bench_serve.md").write_text(markdown(res))
    print((out / "bench_serve.md").read_text())
    return 0


def markdown(r: dict[str, Any]) -> str:
    o = r["overhead_tiny"]
    lines = [
        f"Machine: {r['machine']}.",
        "",
        "| brief's MLP, one sequential client | median latency (ms) |",
        "|---|---|",
        f"| direct `cm(x)` | {o['direct_cm_ms']} |",
        f"| HTTP binary, no batcher | {o['http_unbatched_ms']} (+{o['http_overhead_ms']}) |",
        f"| gRPC, no batcher | {o['grpc_unbatched_ms']} (+{o['grpc_overhead_ms']}) |",
        f"| HTTP binary, batcher on (window 0) | {o['http_batcher_window0_ms']} "
        f"(batcher {o['batcher_cost_http_ms']:+}) |",
        f"| gRPC, batcher on (window 0) | {o['grpc_batcher_window0_ms']} "
        f"(batcher {o['batcher_cost_grpc_ms']:+}) |",
        "",
        "| batch (MLP 2048) | served avg latency (ms) | served rows/s | direct avg (ms) | "
        "direct rows/s |",
        "|---|---|---|---|---|",
    ]
    for t in r["batch_table_wide"]:
        lines.append(
            f"| {t['batch']} | {t['served_avg_ms']} | {t['served_rows_per_s']} | "
            f"{t['direct_avg_ms']} | {t['direct_rows_per_s']} |"
        )
    for key in ("batching_wide", "batching_wider"):
        w = r[key]
        lines += [
            "",
            f"| MLP {w['width']} under locust ({w['batch1_1inst']['users']} users) | req/s | "
            "P50 ms | P99 ms | failures | mean batch | server CPU (cores) | instance busy | "
            "compute ms/batch |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for k in ("batch1_1inst", "batch1_2inst", "dynamic_1inst"):
            if k not in w:
                continue
            x = w[k]
            lines.append(
                f"| {k} | {x['rps']:.1f} | {x['p50_ms']} | {x['p99_ms']} | {x['failures']} | "
                f"{x['mean_batch']} | {x['server_cpu_cores']} | {x['instance_busy']} | "
                f"{x['compute_ms_per_batch']} |"
            )
        lines += [
            "",
            f"MLP {w['width']}: dynamic batching vs batch-1 {w['speedup_dynamic_vs_batch1']}x "
            f"throughput, P99 {'not higher' if w['p99_dynamic_le_batch1'] else 'HIGHER'}"
            + (
                f"; 2 instances vs 1: {w['speedup_2inst_vs_1inst']}x."
                if "speedup_2inst_vs_1inst" in w
                else "."
            ),
        ]
    w = r["batching_wide"]
    for k in ("batch1_1inst", "dynamic_1inst"):
        p = w[k].get("profile")
        if p:
            shares = ", ".join(f"{g} {v:.0%}" for g, v in p["shares"].items())
            lines.append(f"Profile {k} ({p['samples']} py-spy samples): {shares}.")
    t = r["batching_tiny"]
    lines += [
        "",
        f"| brief's MLP under locust ({next(iter(r['batching_tiny'].values()))['users']} users) "
        "| req/s | P50 ms | P99 ms | failures | mean batch |",
        "|---|---|---|---|---|---|",
    ]
    for k, x in t.items():
        lines.append(
            f"| {k} | {x['rps']:.1f} | {x['p50_ms']} | {x['p99_ms']} | {x['failures']} | "
            f"{x['mean_batch']} |"
        )
    s = r["soak_tiny"]
    lines += [
        "",
        f"Soak ({s.get('generator', 'locust')}): {s['seconds']:.0f} s, {s['users']} "
        f"users/connections (the best level of the closed-loop sweep "
        f"{ {k: round(v) for k, v in s['sweep_rps'].items()} })"
        + (
            f" paced at {s['rate_per_user']:.1f} req/s each ({SOAK_SHARE:.0%} of that rate)"
            if s["rate_per_user"]
            else ", closed loop"
        )
        + ": "
        f"{s['requests']} requests, {s['failures']} failed, {s['rps']:.1f} req/s, client P99 "
        f"{s['p99_ms']} ms"
        + (
            f"; over the soak's {s['prometheus_window_s']:.0f} s window Prometheus counts "
            f"{s['server_success']:.0f} successes, {s['server_failed']:.0f} failures and "
            f"{s['server_cancelled_at_stop']:.0f} requests cancelled by the generator's stop "
            f"(in flight when it closed its {s['users']} connections), and its P99 is "
            f"{s['prometheus_p99_ms']} ms ({s['bucket_distance']} bucket(s) from the client's)."
            if "prometheus_p99_ms" in s
            else " (Prometheus not installed: no server P99 comparison)."
        ),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
