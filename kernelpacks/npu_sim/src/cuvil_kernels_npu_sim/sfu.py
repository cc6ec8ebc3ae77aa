"""The special-function unit (SFU): integer softmax, LayerNorm and int8 lookup tables per row.

`SFU fn=... dst src tbl rows cols stride` reads `rows` rows of `cols` int32 words from ACC at
`src` (rows `stride` words apart; int8 values loaded widened), writes the int8-range results
to ACC at `dst` with the same shape, and reads its constants from TBL at `tbl`:

* `LUT`: 256 words, `dst = TBL[tbl + src + 128]`, clamped to [`a_lo`, `a_hi`];
* `SOFTMAX`: the 256-word Q15 exp table; per row d = x - max, e = table[d + 255],
  recip = 2**44 // sum(e), out = clamp(((e * recip + 2**35) >> 36) - 128);
* `LAYERNORM`: 4 * cols words [M..., shift..., sign..., beta_q...]; registers `a_zpa` (x_zp),
  `s_eps` (eps_q), `a_zp`, `a_lo`, `a_hi`; per row c = n*d - sum(d), r = max(isqrt(sum(c^2)
  // n + eps_q), 1), z = (c * (2**50 // r) + 2**29) >> 30, out = clamp(a_zp + beta_q +
  rescale(sign * z, M, shift)).

These are the formulas of docs/semantics.md §11, implemented here independently of the
reference interpreter. Timing: the unit has `alu_lanes` lanes; a row pass streams
ceil(cols / lanes) cycles (LUT: one pass over all elements; SOFTMAX: max, exp + sum, normalize;
LAYERNORM: sum, centre + square-sum, normalize), and each lane owns an iterative divider and
square-root unit, so the per-row divide (and LayerNorm's root) cost
ceil(rows / lanes) * `sfu_div_cycles` (+ `sfu_sqrt_cycles`); then `alu_latency`. The LUT is
replicated per lane (256 bytes each), so every lane looks up once per cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuvil_kernels_npu_sim.errors import AccumulatorOverflowError, ScratchpadBoundsError
from cuvil_kernels_npu_sim.isa import Insn, Mem, SfuFn

if TYPE_CHECKING:
    from cuvil_kernels_npu_sim.machine import Effect, Machine


def _isqrt(v: np.ndarray) -> np.ndarray:
    """Floor square root of non-negative int64 values, exactly."""
    r = np.floor(np.sqrt(v.astype(np.float64))).astype(np.int64)
    r -= (r * r > v).astype(np.int64)
    r += ((r + 1) * (r + 1) <= v).astype(np.int64)
    return r


def _softmax(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    e = table[x - x.max(axis=1, keepdims=True) + 255]
    total = e.sum(axis=1, keepdims=True)
    recip = (np.int64(1) << 44) // total
    return np.clip(((e * recip + (np.int64(1) << 35)) >> 36) - 128, -128, 127)


def _layernorm(m: Machine, x: np.ndarray, table: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    mult, shift, sign, beta = table.reshape(4, n)
    if shift.min() < 1 or shift.max() > 62 or mult.min() < 0:
        raise AccumulatorOverflowError(f"{m.where}: LAYERNORM multiplier/shift out of range")
    d = x - m.regs["a_zpa"]
    c = n * d - d.sum(axis=1, keepdims=True)
    r = np.maximum(_isqrt((c * c).sum(axis=1, keepdims=True) // n + m.regs["s_eps"]), 1)
    z = (c * ((np.int64(1) << 50) // r) + (np.int64(1) << 29)) >> 30
    z = z * sign
    y = (z * mult + (np.int64(1) << (shift - 1))) >> shift
    return np.clip(m.regs["a_zp"] + beta + y, m.regs["a_lo"], m.regs["a_hi"])


def execute_sfu(m: Machine, insn: Insn, fx: Effect) -> None:
    fn = SfuFn(insn["fn"])
    rows, cols, stride = insn["rows"], insn["cols"], insn["stride"]
    src = m._view(Mem.ACC, insn["src"], (rows, cols), (stride, 1), fx, write=False)
    x = np.asarray(src, np.int64)
    if x.size and (x.min() < -128 or x.max() > 127):
        raise AccumulatorOverflowError(f"{m.where}: SFU input outside int8")
    words = 4 * cols if fn is SfuFn.LAYERNORM else 256
    table = np.asarray(m._view(Mem.TBL, insn["tbl"], (words,), (1,), fx, write=False), np.int64)
    lanes, passes = m.cfg.alu_lanes, 3
    row_units = 0
    if fn is SfuFn.LUT:
        out = np.clip(table[x + 128], m.regs["a_lo"], m.regs["a_hi"])
        passes, fx.alu_ops = 1, x.size
    elif fn is SfuFn.SOFTMAX:
        if table[255] != 1 << 15:
            raise ScratchpadBoundsError(f"{m.where}: SOFTMAX table[255] must be 2**15")
        out = _softmax(x, table)
        row_units = m.cfg.sfu_div_cycles
        fx.alu_ops, fx.alu_muls = 3 * x.size + 32 * rows, x.size
    else:
        out = _layernorm(m, x, table)
        row_units = m.cfg.sfu_div_cycles + m.cfg.sfu_sqrt_cycles
        fx.alu_ops, fx.alu_muls = 4 * x.size + 64 * rows, 3 * x.size
    dst = m._view(Mem.ACC, insn["dst"], (rows, cols), (stride, 1), fx, write=True)
    dst[...] = out
    cycles = rows * passes * -(-cols // lanes) + -(-rows // lanes) * row_units + m.cfg.alu_latency
    fx.compute_cycles += cycles
    fx.alu_cycles += cycles
    fx.sram_bytes += 8 * x.size * passes + 4 * words
