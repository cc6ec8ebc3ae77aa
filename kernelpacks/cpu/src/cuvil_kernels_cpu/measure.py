"""Timing of conv algorithm candidates on a layer's shape (``conv_algorithm="measure"``)."""

from __future__ import annotations

import time

import numpy as np


def time_conv_candidates(shape: dict[str, int], threads: int) -> dict[str, float]:
    """Best-of-3 seconds for im2col and Winograd on zeros of ``shape`` (3x3, stride 1, pad 1)."""
    from cuvil_kernels_cpu.kernels import atomics, gemm, winograd
    from cuvil_kernels_cpu.team import Team

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
    mb, pg, kc = gemm.plan_gemm(n * oh * ow, 9 * c, wp.shape[1], threads)
    u = winograd.transform_weights(weight)
    tiles = n * -(-oh // 4) * -(-ow // 4)
    tb = winograd.chunk_tiles(c, o, tiles, threads)
    wpg = winograd.panels_per_item(tiles, tb, u.shape[1], threads)
    pads = np.array([1, 1], np.int64)
    work = np.zeros(atomics.WORDS, np.int64)
    calls = {
        "im2col": lambda: gemm.conv_gemm(x, wp, bp, res, out, geom, lo, hi, 0, 0, False, mb, pg,
                                         kc, work),
        "winograd": lambda: winograd.winograd_conv(x, u, bias, res, out, pads, lo, hi, 0, 0, tb,
                                                   wpg, work),
    }  # fmt: skip
    team = Team(threads) if threads > 1 else None
    best: dict[str, float] = {}
    for name, call in calls.items():
        times = []
        for _ in range(4):
            work[0] = 0
            t0 = time.perf_counter()
            if team is None:
                call()
            else:
                team.run(call, work)
            times.append(time.perf_counter() - t0)
        best[name] = float(min(times[1:]))
    return best
