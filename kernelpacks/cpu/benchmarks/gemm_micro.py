"""The float32 GEMM kernel alone on BERT-base and ResNet-50 shapes, against ORT's MatMul.

``python kernelpacks/cpu/benchmarks/gemm_micro.py [--reps 20] [--baseline OLD_GEMM.PY]``

Times :func:`cuvil_kernels_cpu.kernels.gemm.conv_gemm` (a linear layer: the input rows read in
place), ONNX Runtime's MatMul of the same shape and, with ``--baseline``, another version of
``gemm.py`` (e.g. ``git show HEAD~1:kernelpacks/cpu/src/cuvil_kernels_cpu/kernels/gemm.py``
saved to a file), in one process, with the plan the lowering makes (``gemm.plan_gemm``). The
candidates are timed in alternating blocks after a settle time (``cpu_vs_ort.interleaved``):
ONNX Runtime's pool threads spin for a while after each of its runs, and timed call by call
(the earlier loop here) they held the second core through the pack's next call, so its
two-thread figures came out as its one-thread ones (measured on the AMD EPYC, 2026-12-07:
M128 K3072 N768 7.2 ms on "two threads" against 4.3 for ORT). Two threads run through the
pack's team with a full work array, as in a compiled model. Prints median ms and GFLOP/s per
shape, and whether the two versions agree bit for bit.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

#: (M, K, N): BERT-base seq 128 (QKV, attention output, FFN up and down), ResNet-50 b8 1x1s
SHAPES = [(128, 768, 2304), (128, 768, 768), (128, 768, 3072), (128, 3072, 768),
          (1568, 1024, 256), (392, 2048, 512)]  # fmt: skip


def _load(path: str) -> ModuleType:
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # Numba's cache re-imports a kernel's module by its name
    spec.loader.exec_module(mod)
    return mod


def _ort_matmul(w: np.ndarray, m: int, threads: int) -> Any:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(w, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])  # fmt: skip


def _k_block_arg(mod: ModuleType, kc: int) -> tuple[int, ...]:
    """``conv_gemm``'s K chunk argument, for versions that take one (``--baseline`` may not)."""
    return (kc,) if hasattr(mod, "k_block") else ()


def _runner(mod: ModuleType, kargs: tuple[Any, ...], threads: int, team: Any) -> Callable[[], None]:
    """One call of ``mod.conv_gemm(*kargs)``: on this thread, or on the team of two."""
    work = kargs[-1]

    def call() -> None:
        mod.conv_gemm(*kargs)

    def run() -> None:
        work[0] = 0
        if threads == 1:
            call()
        else:
            team.run(call, work)

    return run


def main() -> None:
    from cpu_vs_ort import interleaved
    from cuvil_kernels_cpu.kernels import atomics, gemm
    from cuvil_kernels_cpu.team import Team

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--baseline", help="path to another gemm.py to compare against")
    args = ap.parse_args()
    mods = {"new": gemm}
    if args.baseline:
        mods = {"old": _load(args.baseline), "new": gemm}
    geom = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.int64)
    inf = np.float32(np.inf)
    rng = np.random.default_rng(0)
    team = Team(2)
    print("load average", os.getloadavg())
    for m, k, n in SHAPES:
        x = rng.standard_normal((1, 1, m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        wp = gemm.pack_weights(w)
        bias = gemm.pack_bias(rng.standard_normal(n).astype(np.float32), 1, n)
        res = np.zeros((1, 1, 1, 1), np.float32)
        outs = {name: np.empty((1, 1, m, n), np.float32) for name in mods}
        work = np.zeros(atomics.WORDS, np.int64)
        for threads in (1, 2):
            mb, pg, kc = gemm.plan_gemm(m, k, wp.shape[1], threads)
            sess = _ort_matmul(w, m, threads)
            feed = {"x": x.reshape(m, k)}

            cands: dict[str, Callable[[], Any]] = {
                name: _runner(
                    mod,
                    (x, wp, bias, res, outs[name], geom, -inf, inf, 0, 0, True, mb, pg,
                     *_k_block_arg(mod, kc), work),
                    threads,
                    team,
                )
                for name, mod in mods.items()
            }
            cands["ort"] = lambda sess=sess, feed=feed: sess.run(None, feed)
            times = interleaved(cands, args.reps, block=2)
            line = f"M{m} K{k} N{n} threads={threads}:"
            for name, med in times.items():
                gflops = 2 * m * k * n / med / 1e9
                line += f"  {name} {med * 1e3:.3f} ms {gflops:.0f} GF/s"
            if "old" in outs:
                line += "  same" if np.array_equal(outs["old"], outs["new"]) else "  DIFFER"
            print(line, flush=True)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
