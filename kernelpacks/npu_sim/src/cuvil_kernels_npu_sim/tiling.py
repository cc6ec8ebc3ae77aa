"""Tile search for convolution-shaped layers (conv, linear, matmul): fit the double-buffered
scratchpads and minimise estimated cycles, then DRAM traffic (VTA-like).

A tile is (oh_t output rows, ow_t output columns, ci_t input channels, co_t output channels) and
a loop order: `weights_outer` (co, spatial, ci: each weight tile loaded once when ci is not split)
or `spatial_outer` (spatial, co, ci: each input tile loaded once when ci is not split). Input
channels are split only when a full-depth tile cannot fit, and the reduction loop is innermost so
partial sums stay in the accumulator. Layers larger than every buffer are tiled on all four axes.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_kernels_npu_sim.config import NpuConfig


@dataclass(frozen=True)
class ConvGeometry:
    """One dense convolution problem (a group pack) in NHWC, per image."""

    batch: int
    h: int
    w: int
    cin: int  # input channels this problem reduces over
    cout: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    depthwise: bool = False  # cin == cout channels, one filter each (DWCONV; tiles ci_t == co_t)

    @property
    def taps_contiguous(self) -> bool:
        """The kw taps of a kernel row are adjacent pixels, so a whole kernel window is `kh`
        contiguous runs of `kw * ci` elements and reduces as one K = kh * kw * ci GEMM."""
        return self.dw == 1 or self.kw == 1

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.ph - self.dh * (self.kh - 1) - 1) // self.sh + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pw - self.dw * (self.kw - 1) - 1) // self.sw + 1

    def touched_input_bytes(self, channels: int) -> int:
        """Bytes of the (unpadded) input that some window reads: `channels` per touched pixel."""
        rows = {o * self.sh - self.ph + r * self.dh for o in range(self.oh) for r in range(self.kh)}
        cols = {o * self.sw - self.pw + t * self.dw for o in range(self.ow) for t in range(self.kw)}
        n_rows = sum(1 for y in rows if 0 <= y < self.h)
        n_cols = sum(1 for x in cols if 0 <= x < self.w)
        return self.batch * n_rows * n_cols * channels

    def in_rows(self, oh_t: int) -> int:
        return (oh_t - 1) * self.sh + (self.kh - 1) * self.dh + 1

    def in_cols(self, ow_t: int) -> int:
        return (ow_t - 1) * self.sw + (self.kw - 1) * self.dw + 1


@dataclass(frozen=True)
class ConvTiling:
    oh_t: int
    ow_t: int
    ci_t: int
    co_t: int
    order: str  # "weights_outer" | "spatial_outer"
    est_cycles: float
    dram_bytes: int


def _splits(total: int, tile: int) -> list[int]:
    return [min(tile, total - s) for s in range(0, total, tile)]


def line_buffered(g: ConvGeometry, cfg: NpuConfig) -> bool:
    """Depthwise with all kh kernel rows in one DWCONV micro-op through the line buffer: needs
    dilation 1, kh <= `dw_line_rows`, every tap on an array row, and a one-pixel-wide tile's
    input row within `dw_line_cols` (the tiler then keeps every tile's row within it)."""
    return (
        g.depthwise
        and g.kh > 1
        and g.dh == 1
        and g.kh <= cfg.dw_line_rows
        and g.kh * g.kw <= cfg.array_rows
        and _touched(g, 1) <= cfg.dw_line_cols
    )


def _fits(g: ConvGeometry, cfg: NpuConfig, oh_t: int, ow_t: int, ci_t: int, co_t: int) -> bool:
    ih, iw = g.in_rows(oh_t), g.in_cols(ow_t)
    if g.depthwise and (ci_t != co_t or g.kw > cfg.array_rows):
        return False
    if line_buffered(g, cfg) and _touched(g, ow_t) > cfg.dw_line_cols:
        return False
    w_tile = g.kh * g.kw * co_t if g.depthwise else g.kh * g.kw * ci_t * co_t
    return (
        ih * iw * ci_t <= cfg.inp_bytes // 2
        and w_tile <= cfg.wgt_bytes // 2
        and oh_t * ow_t * co_t <= cfg.acc_words // 2
        and 3 * co_t <= cfg.tbl_words // 2
        and ih <= 1023
        and iw <= 1023
        and ci_t <= 1023
        and co_t <= 1365
        and g.kh * g.kw <= 1023
        and oh_t <= 1023
        and ow_t <= 1023
        and g.sh * iw * ci_t < 1 << 20
        and g.dh * iw * ci_t * g.kh < 1 << 20
        and ow_t * co_t < 1 << 16
    )


def _burst_factor(run: int, cfg: NpuConfig) -> float:
    """Charged / useful DRAM bytes of transfers made of `run`-byte contiguous pieces."""
    burst = cfg.dram_burst_bytes
    return -(-run // burst) * burst / run


def _split_factor(lens: list[int], pixels: int, cfg: NpuConfig) -> float:
    """Charged / useful bytes of a tensor moved as channel slices `lens` of `pixels`-pixel rows:
    whole rows are one contiguous run, a channel slice is one run per pixel."""
    if len(lens) == 1:
        return _burst_factor(pixels * lens[0], cfg)
    return sum(n * _burst_factor(n, cfg) for n in lens) / sum(lens)


def _touched(g: ConvGeometry, ow_t: int) -> int:
    """Input pixels one DWCONV micro-op streams per output row (see machine._dwconv)."""
    cols = {o * g.sw + t * g.dw for o in range(ow_t) for t in range(g.kw)}
    return len(cols)


def _touched_rows(g: ConvGeometry, oh_t: int) -> int:
    """Input rows a line-buffered DWCONV micro-op streams for `oh_t` output rows."""
    return len({o * g.sh + r * g.dh for o in range(oh_t) for r in range(g.kh)})


def _estimate(
    g: ConvGeometry, cfg: NpuConfig, oh_t: int, ow_t: int, ci_t: int, co_t: int, order: str
) -> tuple[float, int]:
    rows, cols, bw = cfg.array_rows, cfg.array_cols, cfg.dram_bytes_per_cycle
    n_sp = g.batch * -(-g.oh // oh_t) * -(-g.ow // ow_t)
    co_lens, ci_lens = _splits(g.cout, co_t), _splits(g.cin, ci_t)
    n_co, n_ci = len(co_lens), len(ci_lens)
    in_pass = n_sp * g.in_rows(oh_t) * g.in_cols(ow_t) * g.cin
    w_total = g.kh * g.kw * g.cout * (1 if g.depthwise else g.cin)
    out_total = g.batch * g.oh * g.ow * g.cout
    # both slots of a double buffer stay resident, so two reduction steps reload nothing
    if g.depthwise:  # each channel tile reads its own input channels: input read once
        inp, wgt, n_ci = in_pass, w_total, 1
    elif order == "weights_outer":
        inp = n_co * in_pass
        wgt = w_total if n_ci <= 2 or n_sp == 1 else n_sp * w_total
    else:
        inp = in_pass if n_ci <= 2 else n_co * in_pass
        wgt = w_total if n_co * n_ci <= 2 or n_sp == 1 else n_sp * w_total
    # DRAM charges whole bursts per contiguous run: a channel slice of an NHWC pixel is one run
    # (a 32-channel tail tile of a 96-channel tensor pays a full burst per pixel too)
    dram = inp * _split_factor(ci_lens, g.in_cols(ow_t), cfg) + wgt
    dram += out_total * _split_factor(co_lens, ow_t, cfg)
    dram += 12 * g.cout
    m = g.batch * g.oh * g.ow / n_sp
    # the array's cost per fold (timing.py): chained folds step max(M, C + 1) and pay one
    # preload + fill/drain per instruction; without shadow weights every fold pays it
    chained = cfg.weight_double_buffer
    fill = 2 * rows + cols - 2
    if g.depthwise:
        folds = sum(-(-co // cols) for co in co_lens)
        if line_buffered(g, cfg):  # each input pixel of the tile streamed once per fold
            stream = _touched(g, ow_t) * _touched_rows(g, oh_t) * m / (oh_t * ow_t)
            n_folds = folds
        else:
            stream = _touched(g, ow_t) * m / ow_t
            n_folds = g.kh * folds
    else:
        per_row = g.kh * g.kw if g.taps_contiguous else g.kw
        folds = sum(-(-per_row * ci // rows) * -(-co // cols) for ci in ci_lens for co in co_lens)
        stream, n_folds = m, folds * (1 if g.taps_contiguous else g.kh)
    step = max(stream, cols + 1) if chained else stream + fill
    array = n_folds * step
    per_insn = (fill if chained else 0) + 20
    n_steps = n_sp * n_co * n_ci
    compute = n_sp * (array + n_ci * n_co * per_insn + n_co * cfg.alu_latency)
    w_tile = g.kh * g.kw * co_t * (1 if g.depthwise else ci_t)
    first = (g.in_rows(oh_t) * g.in_cols(ow_t) * ci_t + w_tile) / bw
    last = oh_t * ow_t * co_t / bw
    est = max(compute, dram / bw) + first + last + 2 * cfg.dram_latency + 8 * n_steps
    return est, dram


def _balanced(ci_all: list[int], g: ConvGeometry, cfg: NpuConfig, co_t: int) -> list[int]:
    """The deepest input-channel tile that fits, split evenly (1023 + 257 channels would stall
    the double buffer on the unequal steps), and that split halved again (a smaller first load
    starts the array sooner)."""
    fit = next((c for c in ci_all if _fits(g, cfg, 1, 1, c, co_t)), None)
    if fit is None:
        return []
    rows = cfg.array_rows
    out = []
    for parts in (-(-g.cin // fit), 2 * -(-g.cin // fit)):
        even = -(-g.cin // parts)
        even = min(fit, -(-even // rows) * rows) if even > rows else even
        if even not in out and even <= g.cin:
            out.append(even)
    return out


def search_conv_tiling(g: ConvGeometry, cfg: NpuConfig) -> ConvTiling:
    """The best-estimated tiling that fits; ValueError naming the layer shape if none does."""
    rows, cols = cfg.array_rows, cfg.array_cols
    small = {1 << i for i in range(10)}  # below one array width, only when nothing else fits
    co_opts = sorted(
        {g.cout}
        | set(range(cols, min(g.cout, 1365), cols))
        | {v for v in small if v < min(cols, g.cout)}
    )
    ci_all = sorted(
        {g.cin}
        | set(range(rows, min(g.cin, 1023), rows))
        | {v for v in small if v < min(rows, g.cin)},
        reverse=True,
    )
    ow_opts = sorted({-(-g.ow // j) for j in range(1, 65)}, reverse=True)
    best: ConvTiling | None = None
    for order in ("weights_outer", "spatial_outer"):
        for co_t in co_opts:
            for ci_t in [co_t] if g.depthwise else _balanced(ci_all, g, cfg, co_t):
                ow_fit = [o for o in ow_opts if _fits(g, cfg, 1, o, ci_t, co_t)]
                if not ow_fit:
                    continue
                ow_t = ow_fit[0]
                oh_max = max(
                    (h for h in range(1, g.oh + 1) if _fits(g, cfg, h, ow_t, ci_t, co_t)), default=0
                )
                if oh_max == 0:
                    continue
                for oh_t in sorted({min(oh_max, -(-g.oh // j)) for j in range(1, 17)}):
                    est, dram = _estimate(g, cfg, oh_t, ow_t, ci_t, co_t, order)
                    cand = ConvTiling(oh_t, ow_t, ci_t, co_t, order, est, dram)
                    if best is None or (est, dram) < (best.est_cycles, best.dram_bytes):
                        best = cand
    if best is None:
        raise ValueError(f"no tiling of {g} fits the {cfg.name} scratchpads")
    return best
