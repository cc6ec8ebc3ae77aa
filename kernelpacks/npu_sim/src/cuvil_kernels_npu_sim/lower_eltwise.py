"""Elementwise layers on the vector ALU: `lower_qadd` (residual add with the shared-shift rule).

Both int8 inputs are loaded widened into accumulator slots; one MOV copies `a` into the output
slot (so the next load can reuse the input slots while the store drains), and one REQADD computes
clamp(out_zp + (((a - a_zp) * M_a + (b - b_zp) * M_b + 2**(shift-1)) >> shift)) with a single
rounding in a 64-bit datapath, as the quant spec pins for qadd.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cuvil_kernels_npu_sim.builder import Builder, Pipeline
from cuvil_kernels_npu_sim.config import get_config
from cuvil_kernels_npu_sim.isa import AluOp, DType, Mem, Op, Src
from cuvil_kernels_npu_sim.lower_conv import Target, _check_clamp
from cuvil_kernels_npu_sim.program import Program

_COLS = 256  # elements per accumulator row of a chunk


def lower_qadd(
    shape: Sequence[int],
    *,
    a_zp: int,
    b_zp: int,
    m_a: int,
    m_b: int,
    shift: int,
    out_zp: int,
    qmin: int = -128,
    qmax: int = 127,
    target: Target = "npu-v3",
    name: str = "qadd",
) -> Program:
    """a, b: int8 of `shape` (regions "a", "b", same shape); M_a, M_b, shift from the spec's
    shared-shift rule (`shared_shift_multipliers`); output "y" int8 of `shape`."""
    cfg = get_config(target)
    _check_clamp(name, out_zp, qmin, qmax)
    if not 1 <= shift <= 62 or not 0 <= m_a < 1 << 31 or not 0 <= m_b < 1 << 31:
        raise ValueError(f"{name}: need shift in [1, 62] and multipliers in [0, 2**31)")
    total = math.prod(int(v) for v in shape)
    chunk_rows = min(1023, cfg.acc_words // (6 * _COLS))
    chunk = chunk_rows * _COLS
    b = Builder(name, cfg)
    ar = b.region("a", tuple(shape), "int8", "input")
    br = b.region("b", tuple(shape), "int8", "input")
    yr = b.region("y", tuple(shape), "int8", "output")
    pieces = []  # (offset, rows, cols): full chunks, then full rows, then the tail
    pos = 0
    while pos < total:
        left = total - pos
        rows, cols = (min(chunk_rows, left // _COLS), _COLS) if left >= _COLS else (1, left)
        pieces.append((pos, rows, cols))
        pos += rows * cols
    pipe = Pipeline(b, len(pieces), len(pieces))
    for k, (off, rows, cols) in enumerate(pieces):
        slot_a, slot_b, out = (k % 2) * chunk, (2 + k % 2) * chunk, (4 + k % 2) * chunk
        with pipe.load(k):
            b.set(ld_ystride=rows * cols, ld_xstride=cols)
            b.emit(
                Op.LOAD,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=slot_a,
                dram=ar.offset + off,
                y=1,
                x=rows,
                c=cols,
            )
            b.emit(
                Op.LOAD,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=slot_b,
                dram=br.offset + off,
                y=1,
                x=rows,
                c=cols,
            )
        with pipe.compute(k, k, True, True):
            b.set(
                a_cols=cols,
                a_zpa=a_zp,
                a_zpb=b_zp,
                a_ma=m_a,
                a_mb=m_b,
                a_shift=shift,
                a_zp=out_zp,
                a_lo=qmin,
                a_hi=qmax,
            )
            grid = dict(e0=1, e1=rows, ds0=0, ds1=cols, ss0=0, ss1=cols)
            b.emit(
                Op.ALU,
                aluop=AluOp.MOV,
                src=Src.ACC,
                uop=b.uop_block([(out, slot_a, 0)]),
                nuop=1,
                **grid,
            )
            b.emit(
                Op.ALU,
                aluop=AluOp.REQADD,
                src=Src.ACC,
                uop=b.uop_block([(out, slot_b, 0)]),
                nuop=1,
                **grid,
            )
        with pipe.store(k):
            b.set(st_ystride=rows * cols, st_xstride=cols)
            b.emit(
                Op.STORE,
                mem=Mem.ACC,
                dtype=DType.I8,
                sram=out,
                dram=yr.offset + off,
                y=1,
                x=rows,
                c=cols,
            )
    pipe.finish()
    return b.build(0, {"pieces": len(pieces)})
