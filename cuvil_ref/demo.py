"""The main demo (``python -m cuvil_ref.demo``): compile the brief's MLP and ResNet-18.

For each model: capture and compile for the ``ref`` target, print ``module.summary()``, the
maximum error against torch eager (relative to the output's magnitude), and timings.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import cuvil_ref as cuvil
from cuvil_ref.zoo import get_model

DEMO_MODELS = (("mlp", (1, 784)), ("resnet18", (1, 3, 224, 224)))


def _best_of(fn, repeats: int) -> float:
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


def main() -> int:
    torch.set_grad_enabled(False)
    errors = [run_model(name, shape) for name, shape in DEMO_MODELS]
    return 0 if all(e <= 1e-4 for e in errors) else 1


if __name__ == "__main__":
    raise SystemExit(main())
