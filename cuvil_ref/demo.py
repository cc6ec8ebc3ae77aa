"""The main demo (``python -m cuvil_ref.demo``): compile the brief's MLP and ResNet-18.

For each model: capture and compile for the ``ref`` target, print ``module.summary()``, the
maximum error against torch eager (relative to the output's magnitude), and timings. Then, when
the npu_sim kernel pack is installed, ResNet-18 in int8 on the simulated ``npu-v3``: bit-exact
against the reference interpreter, with the simulator's cycles, latency and energy.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

import cuvil_ref as cuvil
from cuvil_ref.zoo import get_model

DEMO_MODELS = (("mlp", (1, 784)), ("resnet18", (1, 3, 224, 224)))


def _best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run_model(name: str, shape: tuple[int, ...], repeats: int = 3) -> float:
    """Compile ``name``, print its summary, error and timings; return the relative error."""
    model, _ = get_model(name)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    compiled = cuvil.torch.compile(model, target="ref", example_inputs=(x,))
    compile_s = time.perf_counter() - start
    with torch.no_grad():
        want = model(x).numpy()
    got = compiled(x).numpy()
    error = float(np.abs(got - want).max() / np.abs(want).max())
    with torch.no_grad():
        eager_s = _best_of(lambda: model(x), repeats)
    ref_s = _best_of(lambda: compiled(x), repeats)
    print(f"== {name} {list(shape)} ==")
    print(compiled.module.summary())
    print(
        f"  max error vs eager: {error:.2e} relative to max |output| "
        f"({'OK' if error <= 1e-4 else 'FAIL'}: limit 1e-4)"
    )
    print(
        f"  capture+compile {compile_s * 1e3:.0f} ms; eager {eager_s * 1e3:.2f} ms; "
        f"ref interpreter {ref_s * 1e3:.2f} ms ({ref_s / eager_s:.1f}x eager)\n"
    )
    return error


def run_npu(name: str = "resnet18", shape: tuple[int, ...] = (1, 3, 224, 224)) -> bool:
    """int8 on npu-v3: returns whether the NPU's output equals the interpreter's bit for bit."""
    available = {r["target"] for r in cuvil.targets() if r["target"] and r["available"]}
    if "npu-v3" not in available:
        print("== npu-v3: the npu_sim kernel pack is not installed; skipped ==")
        return True
    model, _ = get_model(name)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=gen)
    calibration = [torch.randn(*shape, generator=gen) for _ in range(2)]
    start = time.perf_counter()
    compiled = cuvil.torch.compile(
        model, target="npu-v3", quantize="int8", example_inputs=(x,), calibration_data=calibration
    )
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    got = compiled(x).numpy()
    sim_s = time.perf_counter() - start
    (oracle,) = cuvil.interpret(compiled.module, [x.numpy()])
    exact = bool(np.array_equal(got, oracle))
    report = compiled.report()
    m = report["metrics"]
    q = report["quantization"]
    print(f"== {name} {list(shape)} int8 on npu-v3 ==")
    print(
        f"  partitions: {[(p['target'], p['nodes']) for p in report['partitions']['partitions']]}"
    )
    sqnr = q["output_sqnr_db"][0]
    print(f"  output SQNR vs fp32: {sqnr:.1f} dB; bit-exact vs interpreter: {exact}")
    print(
        f"  simulated: {m['cycles']:,} cycles = {m['latency_ms']:.3f} ms at 1 GHz "
        f"({m['cycles'] / m['roofline_cycles']:.2f}x roofline), MAC utilization "
        f"{m['mac_utilization']:.2f}, {m['dram_bytes'] / 1e6:.1f} MB DRAM, "
        f"{m['energy_pj'] / 1e6:.0f} uJ"
    )
    print(
        f"  compile {compile_s * 1e3:.0f} ms; one simulated inference {sim_s:.2f} s of host time\n"
    )
    return exact


def main() -> int:
    torch.set_grad_enabled(False)
    errors = [run_model(name, shape) for name, shape in DEMO_MODELS]
    exact = run_npu()
    return 0 if all(e <= 1e-4 for e in errors) and exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
