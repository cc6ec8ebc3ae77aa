"""Row-wise integer ops on the special-function unit (sfu.py): `lower_qsoftmax`,
`lower_qlayer_norm`, `lower_qlut`.

Rows of the last axis are loaded widened into an accumulator slot (four slots: two inputs, two
outputs, so the load of piece k+1 and the store of piece k-1 overlap the SFU work on piece k),
one SFU instruction transforms the piece, and STORE narrows it to int8. The op's constants (the
exp table, the per-channel LayerNorm table, the activation LUT) are loaded into TBL once, before
the first piece. Tensors are plain row-major in DRAM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from cuvil_kernels_npu_sim.builder import Builder, Pipeline
from cuvil_kernels_npu_sim.config import NpuConfig, get_config
from cuvil_kernels_npu_sim.isa import DType, Mem, Op, SfuFn
from cuvil_kernels_npu_sim.lower_conv import Target, _check_clamp
from cuvil_kernels_npu_sim.program import Program

_LUT_COLS = 256  # elements per row of an elementwise (LUT) piece


def _pieces(rows: int, cols: int, cfg: NpuConfig) -> list[tuple[int, int]]:
    """(first row, row count) pieces of at most one accumulator slot (and 1023 rows)."""
    per = min(1023, cfg.acc_words // 4 // cols)
    return [(r0, min(per, rows - r0)) for r0 in range(0, rows, per)]


def _emit_rows(
    b: Builder,
    cfg: NpuConfig,
    fn: SfuFn,
    pieces: list[tuple[int, int, int]],
    x_off: int,
    y_off: int,
    tbl_off: int,
    tbl_words: int,
    regs: dict[str, int],
) -> None:
    """Pieces (element offset, rows, cols): load, one SFU instruction, store, double-buffered."""
    slot = cfg.acc_words // 4
    pipe = Pipeline(b, len(pieces), len(pieces))
    for k, (off, rows, cols) in enumerate(pieces):
        src, dst = (k % 2) * slot, (2 + k % 2) * slot
        with pipe.load(k):
            if k == 0:
                b.set(ld_ystride=0, ld_xstride=0)
                for first in range(0, tbl_words, 4095):
                    b.emit(
                        Op.LOAD,
                        mem=Mem.TBL,
                        dtype=DType.I32,
                        sram=first,
                        dram=tbl_off + 4 * first,
                        y=1,
                        x=1,
                        c=min(4095, tbl_words - first),
                    )
            b.set(ld_ystride=rows * cols, ld_xstride=cols)
            b.emit(
                Op.LOAD,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=src,
                dram=x_off + off,
                y=1,
                x=rows,
                c=cols,
            )
        with pipe.compute(k, k, True, True):
            b.set(**regs)
            b.emit(Op.SFU, fn=fn, dst=dst, src=src, tbl=0, rows=rows, cols=cols, stride=cols)
        with pipe.store(k):
            b.set(st_ystride=rows * cols, st_xstride=cols)
            b.emit(
                Op.STORE, mem=Mem.ACC, dtype=DType.I8, sram=dst, dram=y_off + off, y=1, x=rows,
                c=cols,
            )  # fmt: skip
    pipe.finish()


def _row_program(
    name: str,
    cfg: NpuConfig,
    shape: tuple[int, ...],
    fn: SfuFn,
    table: np.ndarray,
    regs: dict[str, int],
) -> Program:
    cols = shape[-1]
    rows = math.prod(shape[:-1])
    if not 1 <= cols <= min(4095, cfg.acc_words // 4):
        raise ValueError(f"{name}: rows of {cols} values do not fit one SFU row (<= 4095)")
    b = Builder(name, cfg)
    xr = b.region("x", shape, "int8", "input")
    yr = b.region("y", shape, "int8", "output")
    tr = b.region("tables", table.shape, "int32", "const", data=table)
    pieces = [(r0 * cols, n, cols) for r0, n in _pieces(rows, cols, cfg)]
    _emit_rows(b, cfg, fn, pieces, xr.offset, yr.offset, tr.offset, table.size, regs)
    return b.build(0, {"pieces": len(pieces)})


def lower_qsoftmax(
    shape: Sequence[int],
    table: Sequence[int],
    *,
    axis: int = -1,
    target: Target = "npu-v3",
    name: str = "qsoftmax",
) -> Program:
    """Integer softmax of int8 `x` (region "x") along the last axis with the Q15 exp `table`
    (qsoftmax's attribute); output "y" at scale 2**-8, zero point -128."""
    cfg = get_config(target)
    shape = tuple(int(v) for v in shape)
    if not shape or axis not in (-1, len(shape) - 1):
        raise ValueError(f"{name}: npu_sim runs softmax along the last axis only, got {axis}")
    tbl = np.asarray(table, np.int64)
    if tbl.shape != (256,) or tbl[255] != 1 << 15:
        raise ValueError(f"{name}: the exp table needs 256 Q15 entries with table[255] = 2**15")
    return _row_program(name, cfg, shape, SfuFn.SOFTMAX, tbl.astype(np.int32), {})


def lower_qlayer_norm(
    shape: Sequence[int],
    *,
    x_zp: int,
    multiplier: Sequence[int],
    shift: Sequence[int],
    sign: Sequence[int],
    beta_q: Sequence[int],
    eps_q: int,
    out_zp: int,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qlayer_norm",
) -> Program:
    """Integer LayerNorm of int8 `x` over its last axis (qlayer_norm's attributes)."""
    cfg = get_config(target)
    shape = tuple(int(v) for v in shape)
    _check_clamp(name, out_zp, qmin, qmax)
    n = shape[-1]
    if 4 * n > cfg.tbl_words:
        raise ValueError(
            f"{name}: {n} channels need {4 * n} table words; the table memory holds "
            f"{cfg.tbl_words} (at most {cfg.tbl_words // 4} channels)"
        )
    if not 0 <= eps_q < 1 << 31:
        raise ValueError(f"{name}: eps_q={eps_q} does not fit the 32-bit s_eps register")
    table = np.concatenate([np.asarray(v, np.int64) for v in (multiplier, shift, sign, beta_q)])
    regs = {"a_zpa": x_zp, "s_eps": eps_q, "a_zp": out_zp, "a_lo": qmin, "a_hi": qmax}
    return _row_program(name, cfg, shape, SfuFn.LAYERNORM, table.astype(np.int32), regs)


def lower_qlut(
    shape: Sequence[int],
    table: Sequence[int],
    *,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qlut",
) -> Program:
    """out = clamp(table[x + 128], qmin, qmax) elementwise on int8 `x` of any shape."""
    cfg = get_config(target)
    shape = tuple(int(v) for v in shape)
    _check_clamp(name, 0, qmin, qmax)
    tbl = np.asarray(table, np.int64)
    if tbl.shape != (256,) or tbl.min() < -128 or tbl.max() > 127:
        raise ValueError(f"{name}: the table needs 256 int8 entries")
    total = math.prod(shape)
    if total == 0:
        raise ValueError(f"{name}: empty tensors are not lowered")
    b = Builder(name, cfg)
    xr = b.region("x", shape, "int8", "input")
    yr = b.region("y", shape, "int8", "output")
    tr = b.region("tables", (256,), "int32", "const", data=tbl.astype(np.int32))
    full, tail = divmod(total, _LUT_COLS)
    pieces = [(r0 * _LUT_COLS, n, _LUT_COLS) for r0, n in _pieces(full, _LUT_COLS, cfg)]
    if tail:
        pieces.append((full * _LUT_COLS, 1, tail))
    regs = {"a_lo": qmin, "a_hi": qmax}
    _emit_rows(b, cfg, SfuFn.LUT, pieces, xr.offset, yr.offset, tr.offset, 256, regs)
    return b.build(0, {"pieces": len(pieces)})
