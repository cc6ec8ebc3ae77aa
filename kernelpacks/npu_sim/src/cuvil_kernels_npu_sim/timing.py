"""The MAC array's cycle model: what one GEMM/DWCONV instruction costs, fold by fold.

The array is weight-stationary, R rows (reduction lanes) x C columns (output channels). A *fold*
is one R x C block of weights held in the processing elements (PEs) while a stream of M input
vectors passes through; a micro-op of reduction K and N output channels has
ceil(K / R) * ceil(N / C) folds. Input vector m of a fold enters row r at cycle s + m + r (the
skew), travels right one PE per cycle, and its partial sums flow down a column, so PE (r, c)
sees it at s + m + r + c and column c's result leaves the array R + c cycles after it entered.

**Without double-buffered weights** (`g_wdb = 0`, the SCALE-Sim weight-stationary model), each
fold loads its weights row by row (R cycles), streams M vectors and waits for the wavefront to
fill and drain (R + C - 2), before the next fold may load:

    fold = 2R + C + M - 2

**With double-buffered weight registers** (`g_wdb = 1`; config `weight_double_buffer`): every PE
has an active and a shadow weight register, and a fold tag rides on the first input vector of
each fold, so PE (r, c) switches registers exactly when the next fold's wavefront reaches it.
The shadow register of PE (r, c) is free once that PE switched to the current fold (cycle
s + r + c); the weight bus writes one array row (C bytes from WGT) per cycle, and row r can be
written only once its last PE (c = C - 1) switched, at s + r + C. The next fold's first vector
reaches PE (r, c) at s' + r + c, which must come after that write: s' >= s + C + 1 (worst case
c = 0). Its stream also needs the input port, free at s + M. So folds chain with

    step = max(M, C + 1)

and an instruction whose folds stream M_1 .. M_F vectors costs

    R  +  sum_{f < F} max(M_f, C + 1)  +  M_F  +  R + C - 2
    (first preload, the chained folds, the last fold's stream, one fill and drain)

Short streams (M < C + 1) therefore stall the chain: a classifier row (M = 1) pays C + 1 per
fold. Worked example (npu-v3, R = C = 32): a 3x3 conv micro-op with 64 input channels
(K = 576, 18 row folds), 64 output channels (2 column folds) and a 14 x 14 output tile
(M = 196): 36 folds, 32 + 35 * 196 + 196 + 62 = 7,150 cycles chained, against
36 * (64 + 32 + 196 - 2) = 10,440 without shadow registers and 36 * 196 = 7,056 of pure
streaming (the MAC-bound ideal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuvil_kernels_npu_sim.config import NpuConfig


@dataclass(frozen=True)
class ArrayTime:
    """Cycles of one array instruction: `total`, of which `stream` move useful input vectors and
    `fill` is preload, fill, drain and wavefront stalls (`total = stream + fill`)."""

    total: int
    stream: int

    @property
    def fill(self) -> int:
        return self.total - self.stream


def fold_cycles(m: int, cfg: NpuConfig) -> int:
    """One fold without double-buffered weights (SCALE-Sim): 2R + C + M - 2."""
    return 2 * cfg.array_rows + cfg.array_cols + m - 2


def chain_step(m: int, cfg: NpuConfig) -> int:
    """Cycles between the starts of two chained folds: max(M, C + 1)."""
    return max(m, cfg.array_cols + 1)


def array_time(streams: Sequence[int], cfg: NpuConfig, chained: bool) -> ArrayTime:
    """The cost of folds streaming `streams[f]` vectors each, in order (module docstring)."""
    if not streams:
        return ArrayTime(0, 0)
    rows, cols = cfg.array_rows, cfg.array_cols
    stream = sum(streams)
    if not chained:
        return ArrayTime(sum(fold_cycles(m, cfg) for m in streams), stream)
    steps = sum(chain_step(m, cfg) for m in streams[:-1])
    return ArrayTime(rows + steps + streams[-1] + rows + cols - 2, stream)
