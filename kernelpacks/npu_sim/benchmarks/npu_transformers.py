"""BERT-like and ViT-like encoders compiled with quantize="int8" for npu-v3.

For each model: the share of nodes and of MACs that run in npu-v3 partitions (targets: >= 90 %
of nodes, >= 95 % of MACs), bit-exactness of `program.run` against the reference interpreter,
simulated cycles and the per-op breakdown of NPU cycles. Writes `npu_transformers.json` and
`npu_transformers.md` into the given directory.

    python kernelpacks/npu_sim/benchmarks/npu_transformers.py OUT [MODEL ...]
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("bert_like", "vit_like")
NODE_TARGET, MAC_TARGET = 0.90, 0.95


def node_macs(node: Any) -> int:
    """Multiply-accumulates of a matmul-shaped node (0 for everything else)."""
    out = node.outputs[0].type.shape
    size = math.prod(int(d) for d in out)
    if node.op in ("qlinear", "linear", "qmatmul", "matmul"):
        return size * int(node.inputs[0].type.shape[-1])
    if node.op in ("qconv2d", "conv2d"):
        _, cin_g, kh, kw = (int(d) for d in node.inputs[1].type.shape)
        return size * cin_g * kh * kw
    return 0


def array_shares(program: Any, target: str) -> dict[str, Any]:
    nodes = [(lp.partition.target, n) for lp in program.lowered for n in lp.partition.graph.nodes]
    on = [n for t, n in nodes if t == target]
    macs = sum(node_macs(n) for _, n in nodes)
    return {
        "nodes": len(nodes),
        "nodes_on_npu": len(on),
        "node_share": len(on) / len(nodes),
        "macs": macs,
        "macs_on_npu": sum(node_macs(n) for n in on),
        "mac_share": sum(node_macs(n) for n in on) / max(1, macs),
        "off_npu": dict(Counter(n.op for t, n in nodes if t != target)),
    }


def bench_model(name: str, target: str = "npu-v3") -> dict[str, Any]:
    import torch

    from cuvil_ref import interpret
    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.zoo import get_model

    rng = np.random.default_rng(0)
    model, shape = get_model(name)
    x = rng.standard_normal(shape).astype(np.float32)
    calibration = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    t0 = time.perf_counter()
    module = torch_to_cuvilir(model, example_inputs=(torch.from_numpy(x),))
    program = compile_module(module, target, quantize="int8", calibration_data=calibration)
    compile_s = time.perf_counter() - t0
    got = program.run([x])
    want = interpret(program.module, [x])
    exact = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    cycles, by_op = 0, Counter()
    for lp in program.lowered:
        if lp.partition.target == target:
            m = lp.executable.metrics()
            cycles += m["cycles"]
            for row in m["layers"]:
                by_op[row["op"]] += int(row["cycles"])
    return {
        "model": name,
        "input_shape": list(shape),
        "bit_exact": exact,
        **array_shares(program, target),
        "npu_cycles": cycles,
        "npu_cycles_by_op": dict(by_op.most_common()),
        "output_sqnr_db": program.report()["quantization"]["output_sqnr_db"],
        "compile_seconds": compile_s,
    }


def to_markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        '# npu-v3: integer-only transformers (quantize="int8")',
        "",
        f"Targets: >= {NODE_TARGET:.0%} of nodes and >= {MAC_TARGET:.0%} of MACs on npu-v3, "
        "bit-exact.",
        "",
        "| model | bit-exact | nodes on npu | MACs on npu | off npu | npu cycles | SQNR dB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        off = ", ".join(f"{k} x{v}" for k, v in sorted(r["off_npu"].items()))
        lines.append(
            f"| {r['model']} | {r['bit_exact']} | {r['nodes_on_npu']}/{r['nodes']} "
            f"({r['node_share']:.1%}) | {r['mac_share']:.2%} of {r['macs'] / 1e6:.0f} M | {off} "
            f"| {r['npu_cycles']} | {r['output_sqnr_db'][0]:.1f} |"
        )
    for r in results:
        lines += ["", f"## {r['model']}: npu-v3 cycles by op", "", "| op | cycles |", "|---|---|"]
        lines += [f"| {op} | {c} |" for op, c in r["npu_cycles_by_op"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    from npu_models import _host

    out = Path(argv[0] if argv else "npu_transformers_out")
    models = argv[1:] or list(MODELS)
    out.mkdir(parents=True, exist_ok=True)
    _host()
    results = []
    for name in models:
        r = bench_model(name)
        results.append(r)
        print(
            f"{name:10s} exact {r['bit_exact']}  nodes {r['nodes_on_npu']}/{r['nodes']} "
            f"({r['node_share']:.1%})  MACs {r['mac_share']:.2%}  npu cycles {r['npu_cycles']}  "
            f"off npu {r['off_npu']}"
        )
    (out / "npu_transformers.json").write_text(json.dumps(results, indent=1))
    (out / "npu_transformers.md").write_text(to_markdown(results))
    print(f"wrote {out / 'npu_transformers.json'} and {out / 'npu_transformers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
