"""Lowering of a 3x3 stride-1 convolution to the Winograd F(4x4, 3x3) kernel."""

from __future__ import annotations

import numpy as np

from cuvil_kernels_cpu.lowering.common import Epilogue, pads4
from cuvil_kernels_cpu.lowering.context import LowerContext


def lower(
    cx: LowerContext,
    wname: str,
    weight: np.ndarray,
    bias: np.ndarray | None,
    xin: str,
    res: str,
    dst: str,
    padding: tuple[int, ...],
    epi: Epilogue,
    flops: int,
) -> None:
    from cuvil_kernels_cpu.kernels import winograd
    from cuvil_kernels_cpu.lowering.conv import _bias, _packed

    o, c = weight.shape[:2]
    u = _packed(cx, wname, "winograd", lambda: winograd.transform_weights(weight))
    bb = _packed(cx, f"{wname}.bias", "wb", lambda: _bias(bias, o))
    n, oh, ow, _ = cx.bufs[dst].shape
    tiles = n * -(-oh // 4) * -(-ow // 4)
    threads = int(cx.options["threads"])
    tb = winograd.chunk_tiles(c, o, tiles, threads)
    pg = winograd.panels_per_item(tiles, tb, -(-o // winograd.NR), threads)
    p = pads4(padding)
    lo, hi, act, res_mode = epi.args()
    cx.add(winograd.winograd_conv, [xin, u, bb, res], [dst], algo="winograd",
           static=(np.array(p[:2], np.int64), lo, hi, act, res_mode, tb, pg),
           flops=flops)  # fmt: skip
