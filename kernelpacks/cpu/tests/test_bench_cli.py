"""``cuvil bench --per-layer`` on the cpu target: the pack's per-layer timings, slowest first."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cuvil_ref.cli.main import cli


def _bench(*extra: str) -> str:
    args = ["bench", "zoo:resnet18", "-t", "cpu", "--input-shape", "1,3,32,32", "--warmup", "1",
            "--iters", "2", "--per-layer", *extra]  # fmt: skip
    result = CliRunner(env={"COLUMNS": "250"}).invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_bench_per_layer_lists_every_step_slowest_first() -> None:
    data = json.loads(_bench("--json"))
    layers = data["layers"]
    assert len(layers) > 20  # every conv, pool and permute of ResNet-18
    ms = [r["ms"] for r in layers]
    assert ms == sorted(ms, reverse=True) and ms[0] > 0
    convs = [r["algorithm"] for r in layers if r["op"] == "fused_conv2d"]
    # the host's choice (im2col-gather: rows gathered once, then read by every panel group)
    assert convs and set(convs) <= {"winograd", "im2col", "im2col-gather", "direct", "gemm"}
    assert all("node" in r and "op" in r and "share" in r for r in layers)


def test_bench_per_layer_table() -> None:
    out = _bench()
    assert "per layer on cpu" in out
    assert "│ fused_conv2d" in out and "GFLOP/s" in out
