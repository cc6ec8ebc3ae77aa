"""ResNet-18, ResNet-50 and MobileNetV2 (224x224, batch 1) compiled int8 for npu-v3.

For each model: simulated cycles against the summed per-layer roofline (targets: ResNets <= 1.3x,
MobileNetV2 <= 1.5x), host
seconds of one simulated inference (target < 10 s), bit-exactness against the reference
interpreter, and a per-layer table with depthwise convolutions called out. Writes
`npu_models.json` and `npu_models.md` into the given directory.

    PYTHONPATH=.:kernelpacks/npu_sim/src python kernelpacks/npu_sim/benchmarks/npu_models.py OUT \
        [MODEL ...] [OPTION=VALUE ...]

`OPTION=VALUE` arguments are npu-v3 target options (`loop_unroll_factor=4`,
`weight_double_buffer=false`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("resnet18", "resnet50", "mobilenet_v2")
SHAPE = (1, 3, 224, 224)
RATIO_TARGET = {"resnet18": 1.3, "resnet50": 1.3, "mobilenet_v2": 1.5}
HOST_TARGET = 10.0


def _host() -> None:
    """Make sure npu-v3 is registered (in-process when the pack is not pip-installed)."""
    from cuvil_kernels_npu_sim import plugin

    from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host

    host = PluginHost()
    host.load_entry_points()
    if "npu-v3" not in host.target_names():
        host.register(plugin, PackRecord("npu_sim", "cuvil_kernels_npu_sim.plugin", "0.1.0"))
    reset_host(host)


def _depthwise(node: Any) -> bool:
    if node.op != "qconv2d":
        return False
    groups, cin = node.attrs["groups"], node.inputs[0].type.shape[1]
    return groups > 1 and groups == cin


def bench_model(
    name: str, target: str = "npu-v3", options: dict[str, Any] | None = None
) -> dict[str, Any]:
    import torch

    from cuvil_ref import interpret
    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.zoo import get_model

    rng = np.random.default_rng(0)
    model, _ = get_model(name)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    calibration = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]
    t0 = time.perf_counter()
    module = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(x),))
    program = compile_module(
        module, target, quantize="int8", calibration_data=calibration, options=options
    )
    compile_s = time.perf_counter() - t0
    got = program.run([x])
    want = interpret(program.module, [x])
    exact = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    (npu,) = [lp for lp in program.lowered if lp.partition.target == target]
    m = npu.executable.metrics()
    nodes = {n.outputs[0].name: n for n in npu.partition.graph.nodes}
    layers = []
    for row in m["layers"]:
        node = nodes.get(row["node"])
        roof = float(row["roofline_cycles"])
        layers.append(
            {
                "node": row["node"],
                "op": row["op"],
                "depthwise": node is not None and _depthwise(node),
                "cycles": int(row["cycles"]),
                "roofline_cycles": roof,
                "ratio": row["cycles"] / roof if roof else None,
                "mac_utilization": float(row["mac_utilization"]),
                "bound": row.get("bound", "-"),
                "utilization": float(row.get("utilization", 0.0)),
                "fill_drain_cycles": int(row.get("fill_drain_cycles", 0)),
                "dram_bytes": int(row["dram_bytes"]),
                "energy_pj": float(row["energy_pj"]),
            }
        )
    dw = [r for r in layers if r["depthwise"]]
    summary = {
        "model": name,
        "input_shape": list(SHAPE),
        "target": target,
        "bit_exact": exact,
        "cycles": m["cycles"],
        "roofline_cycles": m["roofline_cycles"],
        "ratio": m["cycles"] / m["roofline_cycles"],
        "latency_ms": m["latency_ms"],
        "mac_utilization": m["mac_utilization"],
        "dram_bytes": m["dram_bytes"],
        "energy_uj": m["energy_pj"] / 1e6,
        "static_uj": m["static_pj"] / 1e6,
        "power_w": m["power_w"],
        "power_w_low": m["power_w_low"],
        "power_w_high": m["power_w_high"],
        "instructions": m["instructions"],
        "host_seconds": m["host_seconds"],
        "compile_seconds": compile_s,
        "fallback_ops": sorted({f.op for f in program.plan.fallback}),
        "depthwise_cycles": sum(r["cycles"] for r in dw),
        "depthwise_roofline_cycles": sum(r["roofline_cycles"] for r in dw),
        "layers": layers,
    }
    summary["meets_ratio_target"] = summary["ratio"] <= RATIO_TARGET.get(name, 1.3)
    summary["meets_host_target"] = summary["host_seconds"] < HOST_TARGET
    return summary


def to_markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# npu-v3: int8 models at 224x224, batch 1",
        "",
        f"Targets: cycles / roofline <= {RATIO_TARGET}, host seconds per simulated inference "
        f"< {HOST_TARGET}.",
        "",
        "| model | bit-exact | cycles | roofline | ratio | latency ms | MAC util | DRAM MB "
        "| energy uJ (static) | power W (range) | host s | depthwise cycles (ratio) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        dw_roof = r["depthwise_roofline_cycles"]
        dw = f"{r['depthwise_cycles']} ({r['depthwise_cycles'] / dw_roof:.2f})" if dw_roof else "-"
        lines.append(
            f"| {r['model']} | {r['bit_exact']} | {r['cycles']} | {r['roofline_cycles']:.0f} | "
            f"{r['ratio']:.3f} | {r['latency_ms']:.3f} | {r['mac_utilization']:.3f} | "
            f"{r['dram_bytes'] / 1e6:.2f} | {r['energy_uj']:.1f} ({r['static_uj']:.1f}) | "
            f"{r['power_w']:.2f} ({r['power_w_low']:.2f}-{r['power_w_high']:.2f}) | "
            f"{r['host_seconds']:.2f} | {dw} |"
        )
    for r in results:
        lines += [
            "",
            f"## {r['model']} per layer",
            "",
            "| node | op | cycles | roofline | ratio | bound | utilization | fill/drain cycles |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in r["layers"]:
            op = row["op"] + (" **(depthwise)**" if row["depthwise"] else "")
            ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
            lines.append(
                f"| {row['node']} | {op} | {row['cycles']} | {row['roofline_cycles']:.0f} | "
                f"{ratio} | {row['bound']} | {row['utilization']:.3f} | "
                f"{row['fill_drain_cycles']} |"
            )
    return "\n".join(lines) + "\n"


def _option(text: str) -> int | bool:
    """`true`/`false` for switches such as weight_double_buffer, else an int."""
    low = text.lower()
    return low == "true" if low in ("true", "false") else int(text)


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "npu_models_out")
    options = {k: _option(v) for k, v in (a.split("=", 1) for a in argv[1:] if "=" in a)}
    models = [a for a in argv[1:] if "=" not in a] or list(MODELS)
    out.mkdir(parents=True, exist_ok=True)
    _host()
    results = []
    for name in models:
        r = bench_model(name, options=options or None)
        results.append(r)
        print(
            f"{name:14s} exact {r['bit_exact']}  cycles {r['cycles']:>10d}  roofline "
            f"{r['roofline_cycles']:>12.0f}  ratio {r['ratio']:.3f}  latency "
            f"{r['latency_ms']:.3f} ms  util {r['mac_utilization']:.3f}  host "
            f"{r['host_seconds']:.2f} s"
        )
    (out / "npu_models.json").write_text(json.dumps(results, indent=1))
    (out / "npu_models.md").write_text(to_markdown(results))
    print(f"wrote {out / 'npu_models.json'} and {out / 'npu_models.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
