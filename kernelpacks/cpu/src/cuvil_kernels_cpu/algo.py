"""Per-layer algorithm choice for convolutions: from a cost model, or measured.

``conv_algorithm="auto"`` (the default) picks by the model below; ``"measure"`` times every
legal candidate on the layer's own shape once (a few runs each, on zeros) and keeps the
fastest -- results are cached on disk by shape, CPU and thread count
(``$CUVIL_CACHE_DIR/cpu-algo.json``, default ``~/.cache/cuvil``), so a second compile pays
nothing; ``"im2col"``/``"direct"``/``"winograd"`` force an algorithm where it is legal. The
report records the choice, the candidates' costs and where they came from.

The model (seconds) for a layer with ``M`` output pixels, ``K = 9 C`` and ``O`` outputs:

* im2col: ``2 M' O K / PEAK + M KH RUN + 4 M K / GATHER + 4 O K / WEIGHTS`` (``M'``: M rounded
  up to the tile height; the gather costs per contiguous run and per byte; the last term the
  weights read from memory once);
* direct: ``2 R O K / PEAK (1 + 8 / (KW C)) + padding copy + 4 O K / WEIGHTS`` where ``R``
  counts the rows the tiles compute and the factor is the per-call overhead of accumulating
  a tile over kernel rows; the copy only where the kernel cannot read its input in place
  (lowering/conv.py) or the profile was fitted when every direct layer copied its input;
* Winograd F(4x4,3x3), ``T`` tiles: ``2 * 36 T' C O / PEAK + 36 T (C + O) 12 / TRANSFORM +
  36 C O 4 / MEMORY`` where ``T'`` is T rounded up to the tile height (the GEMMs' rows) and
  the last term the transformed weights streamed once per chunk of tiles.

The constants are a :class:`CostProfile` per CPU (:func:`profile`), fitted to measurements of
ResNet-18's layers on that CPU; only their ratios matter, and the report names the profile:

* ``zen`` (every CPU not named below): single-thread CPU times on an AMD Zen 5 with AVX-512
  and 32 KiB of L1 (2026-12-02). Its direct cost counts the last tile of an output row as six
  rows (what the kernel then computed), no weight traffic for im2col and direct, and the
  padding copy every direct layer then made (kept until it is refit on such a host).
* ``golden-cove`` (LLVM ``sapphirerapids``, ``emeraldrapids``: Intel Xeon, 48 KiB of L1):
  two-thread layer times on an Emerald Rapids Xeon (2026-12-05, docs/cpu-pack.md). There the
  direct kernel takes its weights in L1-sized passes and runs a row's last tile on exactly its
  rows, and each layer's weights come from memory (ResNet-18's 512-channel layers read 9.4 MB,
  Winograd's transformed weights four times that): it beats Winograd except on 28x28x128 and
  beats im2col everywhere; with its choices and those passes ResNet-18 batch 1 ran 14 % faster.
  Once the direct kernel read its input in place, ``memory`` was refit from 14.6 to 20 GB/s
  against ResNet-18's layer times with all three algorithms forced (2 threads, 2026-12-05,
  docs/cpu-pack.md): the model then picks what measured fastest on every layer but the
  56x56 1x1 stride-2 one (a tie): direct on the stride-2 layers, Winograd on 28x28x128 only.
  Once the Winograd transforms ran on 16-lane vectors (2026-12-06, kernels/winograd_lanes.py,
  4-6x faster), ``transform`` was refit from 11.7 to 45 GB/s, the chunk count became the
  kernel's own (:func:`cuvil_kernels_cpu.kernels.winograd.chunk_tiles`) and ``memory`` was
  refit from 20 to 10 GB/s against whole models, where every layer's transformed weights come
  from memory (timed alone, a layer's weights sat in L3): Winograd on the stride-1 3x3 layers
  up to 128 channels (2.1x the direct kernel's speed at 56x56x64, 2 threads; ResNet-18 b1 7 %
  slower with direct at 28x28x128), direct from 256 channels on (ResNet-18 b1 10 % and
  ResNet-50 b8 11 % faster than with Winograd there).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CostProfile:
    """The cost model's constants for one kind of CPU (module docstring)."""

    name: str
    peak: float = 200e9  # float32 FLOP/s (2 per multiply-add) on the register tile, one core
    gather: float = 10e9  # bytes/s copied by the im2col gather
    run: float = 13e-9  # seconds per contiguous run (one kernel row of one pixel) gathered
    transform: float = 12e9  # bytes/s through the Winograd transforms
    memory: float = 30e9  # bytes/s streaming Winograd's transformed weights
    weights: float = 0.0  # bytes/s a direct or im2col layer reads its weights at (0: free)
    exact_tail: bool = False  # the direct kernel's last tile of a row computes only its rows
    in_place: bool = False  # fitted to the direct kernel reading in place: no copy where it does


ZEN = CostProfile("zen")
GOLDEN_COVE = CostProfile("golden-cove", transform=45e9, memory=10e9, weights=14.6e9,
                          exact_tail=True, in_place=True)  # fmt: skip
#: LLVM CPU names -> profile (anything else: :data:`ZEN`)
PROFILES = {"sapphirerapids": GOLDEN_COVE, "emeraldrapids": GOLDEN_COVE}


def profile(cpu: str | None = None) -> CostProfile:
    """The cost profile for ``cpu`` (an LLVM CPU name; default: this host's)."""
    if cpu is None:
        from cuvil_kernels_cpu.kernels.isa import host_cpu

        cpu = host_cpu()
    return PROFILES.get(cpu, ZEN)


_LOCK = threading.Lock()


def model_costs(shape: dict[str, int], winograd_ok: bool, direct_ok: bool,
                prof: CostProfile | None = None) -> dict[str, float]:  # fmt: skip
    from cuvil_kernels_cpu.kernels.isa import MR

    p = prof or profile()

    n, c, o, oh, ow = shape["n"], shape["c"], shape["o"], shape["oh"], shape["ow"]
    kk = shape["k"]
    k = c * kk * kk
    m = n * oh * ow
    gather = m * kk * p.run + 4 * m * k / p.gather
    weights = 4 * o * k / p.weights if p.weights else 0.0
    costs = {"im2col": 2 * (-(-m // MR) * MR) * o * k / p.peak + gather + weights}
    if direct_ok:
        # tiles do not cross output rows; the last of a row is MR rows or exactly its own
        rows = m if p.exact_tail else n * oh * -(-ow // MR) * MR
        run = kk * c  # the micro-kernel's reduction per call
        # the padded copy (``shape["copy"]`` 0: the kernel reads the input in place)
        copy = shape.get("copy", 1) or not p.in_place
        pad = 8 * n * (shape["h"] + kk) * (shape["w"] + kk) * c if copy else 0
        costs["direct"] = 2 * rows * o * k / p.peak * (1 + 8 / run) + pad / p.gather + weights
    if winograd_ok:
        from cuvil_kernels_cpu.kernels import winograd

        tiles = n * -(-oh // 4) * -(-ow // 4)
        rows = -(-tiles // MR) * MR
        chunks = -(-tiles // winograd.chunk_tiles(c, o, tiles, 1))
        costs["winograd"] = (
            2 * 36 * rows * c * o / p.peak
            + 36 * tiles * (c + o) * 12 / p.transform
            + chunks * 36 * c * o * 4 / p.memory
        )
    return costs


def choose_conv(
    shape: dict[str, int],
    gemm_ok: bool,
    winograd_ok: bool,
    options: dict[str, Any],
    direct_ok: bool = False,
) -> dict[str, Any]:
    """The algorithm for one conv layer and why (see the module docstring)."""
    if gemm_ok:
        return {"algorithm": "gemm", "why": "1x1 stride 1: the input rows are the GEMM operand"}
    mode = options.get("conv_algorithm", "auto")
    legal = {"im2col": True, "winograd": winograd_ok, "direct": direct_ok}
    if mode in legal:
        if not legal[mode]:
            return {"algorithm": "im2col", "why": f"{mode} forced but not legal for this layer"}
        return {"algorithm": mode, "why": "forced by conv_algorithm"}
    prof = profile()
    costs = model_costs(shape, winograd_ok, direct_ok, prof)
    source = f"model ({prof.name} profile)"
    if mode == "measure" and winograd_ok:
        # The measurement times im2col against Winograd (the only pair it can run on a
        # stand-in of the layer), so it decides only where Winograd is legal; the direct
        # kernel is not timed and keeps its modelled cost out of the comparison.
        timed = measured_costs(shape, options)
        costs = {k: v for k, v in timed.items() if k in costs}
        source = "measured"
        untimed = sorted(set(model_costs(shape, winograd_ok, direct_ok, prof)) - set(costs))
        if untimed:
            source += f" (not timed: {', '.join(untimed)})"
    elif mode == "measure":
        source = "model (measure times im2col against winograd, not legal here)"
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
