"""Timing of conv algorithm candidates on a layer's shape (``conv_algorithm="measure"``)."""

from __future__ import annotations

import time

import numpy as np


def time_conv_candidates(shape: dict[str, int], threads: int) -> dict[str, float]:
    """Best-of-3 seconds for im2col and Winograd on zeros of ``shape`` (3x3, stride 1, pad 1)."""
    import numba

    from cuvil_kernels_cpu.kernels import gemm, winograd

    n, c, h, w, o = shape["n"], shape["c"], shape["h"], shape["w"], shape["o"]
    oh, ow = shape["oh"], shape["ow"]
    x = np.zeros((n, h, w, c), np.float32)
    weight = np.zeros((o, c, 3, 3), np.float32)
    out = np.empty((n, oh, ow, o), np.float32)
    res = np.zeros((1, 1, 1, 1), np.float32)
    lo, hi = np.float32(-np.inf), np.float32(np.inf)
    bias = np.zeros(o, np.float32)
    wp = gemm.pack_weights(gemm.conv_weight_kn(weight, 1))
    bp = gemm.pack_bias(None, 1, o)
    geom = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)
    mb, pg = gemm.plan_items(n * oh * ow, 9 * c, wp.shape[1], threads)
    u = winograd.transform_weights(weight)
    tb = winograd.chunk_tiles(c, o, n * -(-oh // 4) * -(-ow // 4), threads)
    pads = np.array([1, 1], np.int64)
    runs = {
        "im2col": lambda: gemm.conv_gemm(x, wp, bp, res, out, geom, lo, hi, 0, 0, False, mb, pg),
        "winograd": lambda: winograd.winograd_conv(x, u, bias, res, out, pads, lo, hi, 0, 0, tb),
    }
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        best: dict[str, float] = {}
        for name, fn in runs.items():
            fn()
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            best[name] = float(min(times))
        return best
    finally:
        numba.set_num_threads(before)
