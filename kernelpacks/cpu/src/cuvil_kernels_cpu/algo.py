"""Per-layer algorithm choice for convolutions: from a cost model, or measured.

``conv_algorithm="auto"`` (the default) picks by the model below; ``"measure"`` times every
legal candidate on the layer's own shape once (a few runs each, on zeros) and keeps the
fastest -- results are cached on disk by shape, CPU and thread count
(``$CUVIL_CACHE_DIR/cpu-algo.json``, default ``~/.cache/cuvil``), so a second compile pays
nothing; ``"im2col"``/``"winograd"`` force an algorithm where it is legal. The report records
the choice, the candidates' costs and where they came from.

The model (seconds) for a layer with ``M`` output pixels, ``K = 9 C`` and ``O`` outputs:

* im2col: ``2 M O K / PEAK + 4 M K / GATHER``;
* Winograd F(4x4,3x3), ``T`` tiles: ``2 * 36 T' C O / PEAK + 36 T (C + O) 12 / TRANSFORM +
  36 C O 4 / MEMORY`` where ``T'`` is T rounded up to the tile height (the GEMMs' rows) and
  the last term the transformed weights streamed once per chunk of tiles.

The constants were fitted to this machine's single-thread figures (docs/benchmarks.md); only
their ratios matter for the choice.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

PEAK = 100e9  # multiply-adds x 2 per second on the register tile, one core
GATHER = 8e9  # bytes/s of im2col gathering
TRANSFORM = 12e9  # bytes/s through the Winograd transforms
MEMORY = 20e9  # bytes/s streaming transformed weights

_LOCK = threading.Lock()


def model_costs(shape: dict[str, int], winograd_ok: bool) -> dict[str, float]:
    n, c, o, oh, ow = shape["n"], shape["c"], shape["o"], shape["oh"], shape["ow"]
    k = c * shape["k"] * shape["k"]
    m = n * oh * ow
    costs = {"im2col": 2 * m * o * k / PEAK + 4 * m * k / GATHER}
    if winograd_ok:
        from cuvil_kernels_cpu.kernels.isa import MR

        tiles = n * -(-oh // 4) * -(-ow // 4)
        rows = -(-tiles // MR) * MR
        chunks = max(1, -(-tiles // max(MR, (1 << 20) // (36 * (c + o + 64) * 4))))
        costs["winograd"] = (
            2 * 36 * rows * c * o / PEAK
            + 36 * tiles * (c + o) * 12 / TRANSFORM
            + chunks * 36 * c * o * 4 / MEMORY
        )
    return costs


def choose_conv(
    shape: dict[str, int], direct: bool, winograd_ok: bool, options: dict[str, Any]
) -> dict[str, Any]:
    """The algorithm for one conv layer and why (see the module docstring)."""
    if direct:
        return {"algorithm": "gemm", "why": "1x1 stride 1: the input rows are the GEMM operand"}
    mode = options.get("conv_algorithm", "auto")
    if mode in ("im2col", "winograd"):
        if mode == "winograd" and not winograd_ok:
            return {"algorithm": "im2col", "why": "winograd forced but not legal (3x3 s1 only)"}
        return {"algorithm": mode, "why": "forced by conv_algorithm"}
    costs = model_costs(shape, winograd_ok)
    source = "model"
    if mode == "measure" and len(costs) > 1:
        costs, source = measured_costs(shape, options), "measured"
    best = min(costs, key=costs.__getitem__)
    return {
        "algorithm": best,
        "why": f"lowest {source} cost",
        "costs_us": {k: round(v * 1e6, 1) for k, v in costs.items()},
    }


def _cache_path() -> Path:
    root = os.environ.get("CUVIL_CACHE_DIR") or os.path.join(Path.home(), ".cache", "cuvil")
    return Path(root) / "cpu-algo.json"


def measured_costs(shape: dict[str, int], options: dict[str, Any]) -> dict[str, float]:
    """Seconds per candidate, timed once per (shape, CPU, threads) and cached on disk."""
    from cuvil_kernels_cpu.kernels.isa import host_cpu

    threads = int(options["threads"])
    key = f"{host_cpu()}|t{threads}|" + ",".join(f"{k}={v}" for k, v in sorted(shape.items()))
    path = _cache_path()
    with _LOCK:
        try:
            table = json.loads(path.read_text())
            if not isinstance(table, dict):
                table = {}
        except (OSError, ValueError):
            table = {}
        hit = table.get(key)
        if isinstance(hit, dict) and all(isinstance(v, float) for v in hit.values()):
            return hit
        from cuvil_kernels_cpu import measure

        result = measure.time_conv_candidates(shape, threads)
        table[key] = result
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(table, indent=0, sort_keys=True))
            tmp.replace(path)
        except OSError:
            pass  # a read-only cache directory only costs the measurement next time
        return result
