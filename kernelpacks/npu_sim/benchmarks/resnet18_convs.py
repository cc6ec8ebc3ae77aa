"""Simulate the conv layers of a ResNet-18 (224x224, batch 1, random int8 weights) on npu-v3 and
print simulated cycles against the summed roofline, plus host time.

    PYTHONPATH=kernelpacks/npu_sim/src python kernelpacks/npu_sim/benchmarks/resnet18_convs.py
"""

from __future__ import annotations

import sys
import time

import numpy as np
from cuvil_kernels_npu_sim import layer_metrics, lower_qconv2d, program_metrics, simulate


def resnet18_convs() -> list[tuple[str, int, int, int, int, int, int]]:
    """(name, cin, cout, size_in, kernel, stride, padding)."""
    layers = [("stem", 3, 64, 224, 7, 2, 3)]
    cin, size = 64, 56
    for stage, cout in enumerate((64, 128, 256, 512), 1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            layers.append((f"layer{stage}.{block}.conv1", cin, cout, size, 3, stride, 1))
            out = size // stride
            layers.append((f"layer{stage}.{block}.conv2", cout, cout, out, 3, 1, 1))
            if stride == 2:
                layers.append((f"layer{stage}.{block}.downsample", cin, cout, size, 1, 2, 0))
            cin, size = cout, out
    return layers


def main(target: str = "npu-v3") -> int:
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    results = []
    for name, cin, cout, size, k, s, p in resnet18_convs():
        x = rng.integers(-128, 128, (1, cin, size, size), dtype=np.int8)
        w = rng.integers(-127, 128, (cout, cin, k, k), dtype=np.int8)
        bias = rng.integers(-1000, 1000, cout).astype(np.int32)
        prog = lower_qconv2d(
            x.shape,
            w,
            bias,
            1 << 30,
            45,
            x_zp=0,
            out_zp=0,
            qmin=0,
            stride=s,
            padding=p,
            target=target,
            name=name,
        )
        res = simulate(prog, {"x": x}, check_hazards=False)
        m = layer_metrics(res)
        print(
            f"{name:24s} cycles {m['cycles']:>9d}  roofline {m['roofline_cycles']:>11.0f}  "
            f"ratio {m['cycles'] / m['roofline_cycles']:5.2f}  util {m['mac_utilization']:.2f}"
            f"  insns {m['instructions']:>5d}"
        )
        results.append(res)
    host = time.perf_counter() - start
    total = program_metrics(results)
    ratio = total["cycles"] / total["roofline_cycles"]
    print(
        f"total: {total['cycles']} cycles ({total['latency_ms']:.3f} ms), roofline "
        f"{total['roofline_cycles']:.0f}, ratio {ratio:.3f}, MAC utilization "
        f"{total['mac_utilization']:.2f}, energy {total['energy_pj'] / 1e6:.1f} uJ, "
        f"power {total['power_w']:.2f} W, instructions "
        f"{sum(r.stats.instructions for r in results)}, host {host:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
