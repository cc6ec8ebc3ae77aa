"""Functional semantics of each instruction: the NPU's architectural state and one step of it.

Each instruction runs as a few vectorized numpy operations (one per micro-op at most, never one
per element). An int8 x int8 GEMM tile runs in float32 BLAS, exactly: |operand| <= 255 after
zero-point subtraction, so over a reduction chunk of 256 every product and partial sum is an
integer below 256 * 255 * 255 < 2**24; chunks are summed in int64. (float32 BLAS is ~10x faster
than float64 here, which is what keeps a ResNet-18 simulation within seconds.)
`execute` returns an `Effect`: what was touched (for the hazard checker) and what it cost (for the
timing model and the counters).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.errors import AccumulatorOverflowError, ScratchpadBoundsError
from cuvil_kernels_npu_sim.isa import REGISTER_NAMES, AluOp, DType, Insn, Mem, Op, Src
from cuvil_kernels_npu_sim.sfu import execute_sfu
from cuvil_kernels_npu_sim.timing import array_time

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
_EXACT_K = 256  # reduction chunk whose float32 dot products are exact (see module docstring)
Access = tuple[Mem, int, int, bool]  # memory, first element, one past last element, is_write


@dataclass
class Effect:
    accesses: list[Access] = field(default_factory=list)
    dram_bytes: int = 0
    dram_charged_bytes: int = 0  # rounded up to DRAM bursts per contiguous run
    sram_bytes: int = 0
    macs: int = 0
    compute_cycles: int = 0
    stream_cycles: int = 0  # array cycles moving useful input vectors (timing.py)
    fill_cycles: int = 0  # array preload, fill, drain and wavefront stalls
    alu_cycles: int = 0  # vector ALU instruction cycles
    alu_ops: int = 0
    alu_muls: int = 0


class Machine:
    """Scratchpads (INP, WGT int8; ACC, TBL int32 kept in int64 to detect overflow), micro-op
    table, registers and DRAM."""

    def __init__(self, config: NpuConfig, dram: np.ndarray) -> None:
        self.cfg = config
        self.dram = dram
        self.mems: dict[Mem, np.ndarray] = {
            Mem.INP: np.zeros(config.inp_bytes, np.int8),
            Mem.WGT: np.zeros(config.wgt_bytes, np.int8),
            Mem.ACC: np.zeros(config.acc_words, np.int64),
            Mem.TBL: np.zeros(config.tbl_words, np.int64),
            Mem.UOP: np.zeros(3 * config.uop_entries, np.int64),
        }
        self.regs: dict[str, int] = dict.fromkeys(REGISTER_NAMES.values(), 0)
        self.where = ""

    # -- helpers ---------------------------------------------------------------------------
    def _view(
        self,
        mem: Mem,
        base: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        fx: Effect,
        write: bool,
    ) -> np.ndarray:
        buf = self.mems[mem]
        if min(shape) <= 0:
            raise ScratchpadBoundsError(f"{self.where}: empty {mem.name} access shape {shape}")
        hi = base + sum((e - 1) * s for e, s in zip(shape, strides, strict=True))
        lo = base + sum((e - 1) * s for e, s in zip(shape, strides, strict=True) if s < 0)
        if lo < 0 or hi >= buf.size:
            raise ScratchpadBoundsError(
                f"{self.where}: {mem.name} access [{lo}, {hi}] outside [0, {buf.size - 1}]"
            )
        fx.accesses.append((mem, lo, hi + 1, write))
        return as_strided(buf[base:], shape, tuple(s * buf.itemsize for s in strides))

    def _check_int32(self, values: np.ndarray, what: str) -> None:
        if values.size and (values.min() < INT32_MIN or values.max() > INT32_MAX):
            raise AccumulatorOverflowError(
                f"{self.where}: {what} result range [{values.min()}, {values.max()}] overflows "
                "the int32 accumulator; split the reduction or reduce the multiplier"
            )

    def _dram_view(
        self, base: int, shape: tuple[int, int, int], ystride: int, xstride: int, dtype: DType
    ) -> np.ndarray:
        esize = 4 if dtype is DType.I32 else 1
        y, x, c = shape
        hi = base + (y - 1) * ystride + (x - 1) * xstride + c * esize
        lo = base + min(0, (y - 1) * ystride) + min(0, (x - 1) * xstride)
        if lo < 0 or hi > self.dram.size:
            raise ScratchpadBoundsError(
                f"{self.where}: DRAM bytes [{lo}, {hi}) outside the {self.dram.size}-byte image"
            )
        return np.ndarray(
            shape, "<i4" if esize == 4 else np.int8, self.dram.data, base, (ystride, xstride, esize)
        )

    @staticmethod
    def _charged(
        shape: tuple[int, int, int], ystride: int, xstride: int, esize: int, burst: int
    ) -> int:
        y, x, c = shape
        run, runs = c * esize, y * x
        if xstride == c * esize or x == 1:
            run, runs = x * c * esize, y
            if ystride == run or y == 1:
                run, runs = y * run, 1
        return runs * -(-run // burst) * burst

    # -- instructions ----------------------------------------------------------------------
    def execute(self, insn: Insn) -> Effect:
        fx = Effect()
        handler = _HANDLERS.get(insn.op)
        if handler is not None:
            handler(self, insn, fx)
        return fx

    def _set(self, insn: Insn, fx: Effect) -> None:
        self.regs[REGISTER_NAMES[insn["reg"]]] = insn["value"]

    def _load(self, insn: Insn, fx: Effect) -> None:
        mem, dtype = Mem(insn["mem"]), DType(insn["dtype"])
        y, x, c = insn["y"], insn["x"], insn["c"]
        pt, pb, pl, pr = insn["pt"], insn["pb"], insn["pl"], insn["pr"]
        if mem in (Mem.INP, Mem.WGT) and dtype is DType.I32:
            raise ScratchpadBoundsError(
                f"{self.where}: cannot load int32 data into int8 {mem.name}"
            )
        src = self._dram_view(
            insn["dram"], (y, x, c), self.regs["ld_ystride"], self.regs["ld_xstride"], dtype
        )
        box = (y + pt + pb, x + pl + pr, c)
        dst = self._view(mem, insn["sram"], box, (box[1] * c, c, 1), fx, write=True)
        if pt or pb or pl or pr:
            pad = self.regs["ld_pad"]
            if mem in (Mem.INP, Mem.WGT) and not -128 <= pad <= 127:
                raise ScratchpadBoundsError(f"{self.where}: pad value {pad} does not fit int8")
            dst[...] = pad
        dst[pt : pt + y, pl : pl + x] = src
        esize = 4 if dtype is DType.I32 else 1
        fx.dram_bytes = y * x * c * esize
        fx.dram_charged_bytes = self._charged(
            (y, x, c),
            self.regs["ld_ystride"],
            self.regs["ld_xstride"],
            esize,
            self.cfg.dram_burst_bytes,
        )
        fx.sram_bytes = (
            dst.size * self.mems[mem].itemsize if mem in (Mem.INP, Mem.WGT) else dst.size * 4
        )

    def _store(self, insn: Insn, fx: Effect) -> None:
        mem, dtype = Mem(insn["mem"]), DType(insn["dtype"])
        y, x, c = insn["y"], insn["x"], insn["c"]
        src = self._view(mem, insn["sram"], (y, x, c), (x * c, c, 1), fx, write=False)
        if dtype is DType.I8 and src.size and (src.min() < -128 or src.max() > 127):
            raise AccumulatorOverflowError(
                f"{self.where}: STORE dtype=I8 of values in [{src.min()}, {src.max()}]; "
                "requantize or clamp to int8 before storing"
            )
        dst = self._dram_view(
            insn["dram"], (y, x, c), self.regs["st_ystride"], self.regs["st_xstride"], dtype
        )
        dst[...] = src
        esize = 4 if dtype is DType.I32 else 1
        fx.dram_bytes = y * x * c * esize
        fx.dram_charged_bytes = self._charged(
            (y, x, c),
            self.regs["st_ystride"],
            self.regs["st_xstride"],
            esize,
            self.cfg.dram_burst_bytes,
        )
        fx.sram_bytes = src.size * (4 if mem in (Mem.ACC, Mem.TBL) else 1)

    def _uops(self, insn: Insn, fx: Effect) -> np.ndarray:
        first, count = insn["uop"], insn["nuop"]
        table = self._view(Mem.UOP, 3 * first, (max(count, 1), 3), (3, 1), fx, write=False)
        return table[:count]

    def _acc_views(self, insn: Insn, uops: np.ndarray, fx: Effect) -> list[np.ndarray]:
        e0, e1, n = insn["e0"], insn["e1"], self.regs["g_n"]
        views = [
            self._view(Mem.ACC, int(a), (e0, e1, n), (insn["as0"], insn["as1"], 1), fx, write=True)
            for a, _, _ in uops
        ]
        for view in views:
            _check_disjoint(view, self.where)
        if insn["reset"]:
            for view in views:
                view[...] = 0
        return views

    def _gemm(self, insn: Insn, fx: Effect) -> None:
        r = self.regs
        e0, e1 = insn["e0"], insn["e1"]
        ki, ko, kos, n = r["g_ki"], r["g_ko"], r["g_kos"], r["g_n"]
        k, m = ki * ko, e0 * e1
        uops = self._uops(insn, fx)
        acc_views = self._acc_views(insn, uops, fx)
        rows, cols = self.cfg.array_rows, self.cfg.array_cols
        streams: list[int] = []
        for (_, i, w), acc in zip(uops, acc_views, strict=True):
            xs = self._view(
                Mem.INP,
                int(i),
                (e0, e1, ko, ki),
                (insn["is0"], insn["is1"], kos, 1),
                fx,
                write=False,
            )
            ws = self._view(Mem.WGT, int(w), (k, n), (n, 1), fx, write=False)
            a = xs.reshape(m, k).astype(np.float32) - np.float32(r["g_izp"])
            b = ws.astype(np.float32) - np.float32(r["g_wzp"])
            product = np.zeros((m, n), np.int64)
            for k0 in range(0, k, _EXACT_K):
                product += (a[:, k0 : k0 + _EXACT_K] @ b[k0 : k0 + _EXACT_K]).astype(np.int64)
            result = acc + product.reshape(e0, e1, n)
            self._check_int32(result, "GEMM")
            acc[...] = result
            streams += [m] * (-(-k // rows) * -(-n // cols))
            fx.sram_bytes += m * k * -(-n // cols) + k * n + 8 * m * n * -(-k // rows)
        fx.macs = len(uops) * m * k * n
        self._charge_array(streams, fx)
        self._output_stage(insn, uops, acc_views, fx)

    def _dwconv(self, insn: Insn, fx: Effect) -> None:
        """Depthwise, per micro-op (acc, inp, wgt), with kr = max(g_kr, 1) kernel rows:
        ACC[e0, e1, n] += sum_{r < kr, t < g_ko} (INP[inp + r*g_krs + t*g_kos + n] - izp)
        * (WGT[wgt + (r*g_ko + t)*g_n + n] - wzp).

        Channels map onto array columns (one channel per column, `g_n` channels in
        ceil(g_n / cols) folds) and the kr * g_ko taps sit on the array rows, weight-stationary
        per channel; a column's partial-sum chain adds them, so each output pixel updates its
        accumulator once. Input pixel vectors (`cols` channels of one pixel, one INP read per
        cycle, as in GEMM) stream through a systolic tap chain. With kr = 1 a micro-op costs,
        per fold, the distinct input pixels its taps touch. With kr > 1 the line buffer
        (`dw_line_rows` x `dw_line_cols` pixels x `cols` channels) keeps the rows already
        streamed and replays them to the upper kernel rows' taps, so each input pixel of the
        window set is read from INP once: a fold costs touched rows x touched columns, which
        includes filling the line buffer with the first kr - 1 rows.
        """
        r = self.regs
        e0, e1, ko, kos, n = insn["e0"], insn["e1"], r["g_ko"], r["g_kos"], r["g_n"]
        kr, krs = max(r["g_kr"], 1), r["g_krs"]
        uops = self._uops(insn, fx)
        rows, cols = self.cfg.array_rows, self.cfg.array_cols
        is0, is1 = insn["is0"], insn["is1"]
        pixels = _touched_pixels(e1, is1, ko, kos)
        if kr * ko > rows:
            raise ScratchpadBoundsError(
                f"{self.where}: DWCONV g_kr * g_ko = {kr} * {ko} taps exceed the {rows} array "
                "rows; split the kernel over several micro-ops"
            )
        if kr > 1 and (kr > self.cfg.dw_line_rows or pixels > self.cfg.dw_line_cols):
            raise ScratchpadBoundsError(
                f"{self.where}: DWCONV g_kr={kr} rows of {pixels} pixels exceed the "
                f"{self.cfg.dw_line_rows} x {self.cfg.dw_line_cols} line buffer; use a narrower "
                "tile or g_kr=1"
            )
        if kr > 1 and not (krs > 0 and (e0 == 1 or krs <= is0)):
            raise ScratchpadBoundsError(
                f"{self.where}: DWCONV line-buffer reuse needs 0 < g_krs={krs} <= is0={is0} "
                "(kernel rows no further apart than output rows: dilation 1); use g_kr=1"
            )
        acc_views = self._acc_views(insn, uops, fx)
        for (_, i, w), acc in zip(uops, acc_views, strict=True):
            xs = self._view(
                Mem.INP, int(i), (e0, e1, kr, ko, n), (is0, is1, krs, kos, 1), fx, write=False
            )
            ws = self._view(Mem.WGT, int(w), (kr, ko, n), (ko * n, n, 1), fx, write=False)
            a = xs.astype(np.int32) - np.int32(r["g_izp"])
            b = ws.astype(np.int32) - np.int32(r["g_wzp"])
            # |a|, |b| <= 255 and kr * ko <= rows: the int32 sum is exact
            result = acc + np.einsum("xyrtn,rtn->xyn", a, b, dtype=np.int32)
            self._check_int32(result, "DWCONV")
            acc[...] = result
        if kr == 1:
            streamed, line_bytes = e0 * pixels, 0
        else:
            streamed = _touched_pixels(e0, is0, kr, krs) * pixels
            line_bytes = kr * streamed * n  # one line-buffer write + kr - 1 reads per pixel
        self._charge_array([streamed] * (len(uops) * -(-n // cols)), fx)
        fx.sram_bytes += len(uops) * (streamed * n + line_bytes + kr * ko * n + 8 * e0 * e1 * n)
        fx.macs = len(uops) * e0 * e1 * kr * ko * n
        self._output_stage(insn, uops, acc_views, fx)

    def _charge_array(self, streams: list[int], fx: Effect) -> None:
        """Array cycles of folds streaming `streams` vectors (timing.py); `g_wdb` chains them
        through the shadow weight registers, which the config must have."""
        chained = bool(self.regs["g_wdb"])
        if chained and not self.cfg.weight_double_buffer:
            raise ScratchpadBoundsError(
                f"{self.where}: g_wdb=1 needs shadow weight registers, which {self.cfg.name} "
                "lacks (weight_double_buffer=False); set g_wdb=0"
            )
        t = array_time(streams, self.cfg, chained)
        fx.compute_cycles += t.total
        fx.stream_cycles += t.stream
        fx.fill_cycles += t.fill

    def _output_stage(
        self, insn: Insn, uops: np.ndarray, acc_views: list[np.ndarray], fx: Effect
    ) -> None:
        """`rq=1`: requantize each distinct accumulator view as it drains (bias, per-channel
        M/shift from TBL at `g_tbl`, then `a_zp` and the `a_lo`/`a_hi` clamp, exactly as ALU
        REQUANT). The output stage has `alu_lanes` lanes and runs behind the array, so the
        instruction ends `alu_latency` after the later of the array and the stage."""
        if not insn["rq"]:
            return
        n = self.regs["g_n"]
        table = self._view(Mem.TBL, self.regs["g_tbl"], (3 * n,), (1,), fx, write=False)
        seen: set[int] = set()
        elements = 0
        for (a, _, _), view in zip(uops, acc_views, strict=True):
            if int(a) in seen:
                continue
            seen.add(int(a))
            view[...] = self._alu_value(AluOp.REQUANT, view, table)
            elements += view.size
        stage = -(-elements // self.cfg.alu_lanes)
        end = max(fx.compute_cycles, stage) + self.cfg.alu_latency
        fx.fill_cycles += end - fx.compute_cycles  # the output stage's tail after the drain
        fx.compute_cycles = end
        fx.alu_ops += elements
        fx.alu_muls += elements
        fx.sram_bytes += 12 * n + 8 * elements

    def _alu(self, insn: Insn, fx: Effect) -> None:
        r = self.regs
        op, src_kind = AluOp(insn["aluop"]), Src(insn["src"])
        e0, e1, cols = insn["e0"], insn["e1"], r["a_cols"]
        shape = (e0, e1, cols)
        for d, s, _ in self._uops(insn, fx):
            dst = self._view(Mem.ACC, int(d), shape, (insn["ds0"], insn["ds1"], 1), fx, write=True)
            _check_disjoint(dst, self.where)
            if src_kind is Src.IMM:
                src: np.ndarray | int = r["a_imm"]
            else:
                mem = Mem.ACC if src_kind is Src.ACC else Mem.TBL
                span = 3 * cols if op is AluOp.REQUANT else cols
                src = self._view(
                    mem, int(s), (e0, e1, span), (insn["ss0"], insn["ss1"], 1), fx, write=False
                )
            dst[...] = self._alu_value(op, dst, src)
            fx.alu_ops += dst.size
            fx.alu_muls += dst.size * {AluOp.MUL: 1, AluOp.REQUANT: 1, AluOp.REQADD: 2}.get(op, 0)
            fx.compute_cycles += -(-dst.size // self.cfg.alu_lanes)
            fx.alu_cycles += -(-dst.size // self.cfg.alu_lanes)
            fx.sram_bytes += dst.size * 4 * (3 if src_kind is not Src.IMM else 2)
        fx.compute_cycles += self.cfg.alu_latency
        fx.alu_cycles += self.cfg.alu_latency

    def _alu_value(self, op: AluOp, dst: np.ndarray, src: np.ndarray | int) -> np.ndarray:
        r = self.regs
        if op is AluOp.REQUANT:
            if not isinstance(src, np.ndarray):
                raise ScratchpadBoundsError(f"{self.where}: REQUANT needs src=TBL (bias, M, shift)")
            cols = dst.shape[-1]
            bias, mult, shift = src[..., :cols], src[..., cols : 2 * cols], src[..., 2 * cols :]
            if shift.size and (shift.min() < 1 or shift.max() > 62):
                raise AccumulatorOverflowError(f"{self.where}: REQUANT shift outside [1, 62]")
            if mult.size and (mult.min() < 0 or mult.max() > INT32_MAX):
                raise AccumulatorOverflowError(f"{self.where}: REQUANT multiplier outside int32")
            acc = dst + bias
            self._check_int32(acc, "REQUANT bias add")
            scaled = (acc * mult + (np.int64(1) << (shift - 1))) >> shift
            return np.clip(r["a_zp"] + scaled, r["a_lo"], r["a_hi"])
        if op is AluOp.REQADD:
            shift = r["a_shift"]
            if not 1 <= shift <= 62:
                raise AccumulatorOverflowError(
                    f"{self.where}: REQADD a_shift={shift} not in [1, 62]"
                )
            total = (dst - r["a_zpa"]) * r["a_ma"] + (src - r["a_zpb"]) * r["a_mb"]
            scaled = (total + (1 << (shift - 1))) >> shift
            return np.clip(r["a_zp"] + scaled, r["a_lo"], r["a_hi"])
        if op is AluOp.CLAMP:
            return np.clip(dst, r["a_lo"], r["a_hi"])
        if op is AluOp.MOV:
            return np.broadcast_to(src, dst.shape)
        if op is AluOp.SHR:
            return dst >> np.clip(src, 0, 63)
        value = {
            AluOp.ADD: np.add,
            AluOp.MAX: np.maximum,
            AluOp.MIN: np.minimum,
            AluOp.MUL: np.multiply,
        }[op](dst, src)
        self._check_int32(value, op.name)
        return value


@functools.lru_cache(maxsize=256)
def _touched_pixels(e1: int, is1: int, ko: int, kos: int) -> int:
    """Distinct input positions `i1 * is1 + t * kos` (i1 < e1, t < ko) of one output row."""
    return int(np.unique(np.add.outer(np.arange(e1) * is1, np.arange(ko) * kos)).size)


def _check_disjoint(view: np.ndarray, where: str) -> None:
    """A destination view must not name one element twice (the result would be ill-defined)."""
    e0, e1, n = view.shape
    s0, s1 = (s // view.itemsize for s in view.strides[:2])
    ok_inner = e1 == 1 or s1 >= n
    ok_outer = e0 == 1 or s0 >= (e1 - 1) * s1 + n
    if not (ok_inner and ok_outer):
        raise ScratchpadBoundsError(
            f"{where}: destination rows overlap (strides {s0}, {s1}, n={n})"
        )


_HANDLERS = {
    Op.SET: Machine._set,
    Op.LOAD: Machine._load,
    Op.STORE: Machine._store,
    Op.GEMM: Machine._gemm,
    Op.DWCONV: Machine._dwconv,
    Op.ALU: Machine._alu,
    Op.SFU: execute_sfu,
}
