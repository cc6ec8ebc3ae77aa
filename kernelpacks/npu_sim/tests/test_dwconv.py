"""DWCONV (depthwise on the array: channels on columns, kernel taps as the reduction, kernel
rows through the line buffer), the array output stage (`rq=1`), and the im2col-ordered
single-micro-op GEMM for dense windows."""

from __future__ import annotations

import numpy as np
import pytest
import spec_reference as ref
from cuvil_kernels_npu_sim import (
    NPU_V3,
    Op,
    Program,
    Region,
    assemble,
    config_from_dict,
    decode,
    disassemble,
    lower_qconv2d,
    parse_program,
    simulate,
)
from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.errors import ScratchpadBoundsError
from cuvil_kernels_npu_sim.isa import REGISTERS, Mem
from cuvil_kernels_npu_sim.machine import Effect, Machine

TINY = config_from_dict(
    {"inp_bytes": 2048, "wgt_bytes": 512, "acc_bytes": 4096, "array_rows": 8, "array_cols": 8}
)

DW_CASES = {
    # name: (x_shape, kernel, stride, padding, dilation, target)
    "3x3_s1": ((1, 48, 10, 9), 3, 1, 1, 1, "npu-v3"),
    "3x3_s2_odd": ((2, 37, 11, 12), 3, 2, 1, 1, "npu-v3"),
    "5x5_dilation2": ((1, 20, 13, 13), 5, 1, 4, 2, "npu-v3"),
    "tiled_on_every_axis": ((1, 40, 14, 15), 3, 1, 1, 1, TINY),
    "npu_v2": ((1, 24, 9, 9), 3, 2, 1, 1, "npu-v2"),
}


def _mults(rng: np.random.Generator, cout: int, k: int) -> tuple[list[int], list[int]]:
    pairs = [ref.quantize_multiplier(float(r)) for r in rng.uniform(0.3, 2.0, cout) / (8 * k**0.5)]
    return [m for m, _ in pairs], [s for _, s in pairs]


def _dw(rng: np.random.Generator, case: str) -> tuple[Program, np.ndarray, np.ndarray]:
    x_shape, k, stride, pad, dil, target = DW_CASES[case]
    c = x_shape[1]
    x = rng.integers(-128, 128, x_shape, dtype=np.int8)
    w = rng.integers(-127, 128, (c, 1, k, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    mult, shift = _mults(rng, c, k * k)
    kw = dict(stride=stride, padding=pad, dilation=dil, groups=c)
    prog = lower_qconv2d(x_shape, w, bias, mult, shift, x_zp=-3, out_zp=4, target=target, **kw)
    want = ref.qconv2d(
        x,
        w,
        bias,
        mult,
        shift,
        -3,
        4,
        stride=(stride,) * 2,
        padding=(pad,) * 2,
        dilation=(dil,) * 2,
        groups=c,
    )
    return prog, x, want


@pytest.mark.parametrize("case", sorted(DW_CASES))
def test_depthwise_runs_as_dwconv_bit_exact(case: str, rng: np.random.Generator) -> None:
    prog, x, want = _dw(rng, case)
    ops = {i.op for i in prog.insns}
    assert Op.DWCONV in ops and Op.GEMM not in ops
    assert prog.info["geometry"].depthwise
    got = simulate(prog, {"x": x}).outputs["y"]
    assert np.array_equal(got, want)
    assert len(np.unique(want)) > 10


def test_depthwise_weights_are_compact(rng: np.random.Generator) -> None:
    prog, _, _ = _dw(rng, "3x3_s1")
    assert prog.regions["weights"].nbytes == 48 * 9  # no block-diagonal zeros


def test_depthwise_program_is_race_free_in_random_interleavings(
    rng: np.random.Generator,
) -> None:
    prog, x, want = _dw(rng, "tiled_on_every_axis")
    assert prog.info["tiling"].co_t < 40 and prog.info["tiling"].oh_t < 14
    for seed in range(3):
        res = simulate(prog, {"x": x}, mode="random", seed=seed)
        assert np.array_equal(res.outputs["y"], want) and res.stats.leftover_tokens == 0


def _raw(text: str, dram: np.ndarray) -> Program:
    region = Region("d", 0, (dram.size,), "int8", "const")
    return Program("raw", NPU_V3, tuple(parse_program(text)), {"d": region}, dram.view(np.uint8), 0)


def _one_row_program(e1: int, stride: int, rq: int) -> str:
    # 1 output row, 3 taps of 4 channels; input row of 2 * e1 + 2 pixels at INP 0, weights WGT 0
    return f"""
    SET reg=g_ko value=3
    SET reg=g_kos value=4
    SET reg=g_n value=4
    SET reg=g_izp value=1
    SET reg=g_wzp value=-2
    SET reg=g_tbl value=0
    SET reg=a_zp value=3
    SET reg=a_lo value=-128
    SET reg=a_hi value=127
    DWCONV reset=1 uop=0 nuop=1 e0=1 e1={e1} is0=0 is1={4 * stride} as0=0 as1=4 rq={rq}
    """


@pytest.mark.parametrize("stride", [1, 2])
def test_dwconv_semantics_and_cost_per_touched_pixel(stride: int) -> None:
    rng = np.random.default_rng(5)
    e1 = 9
    inp = rng.integers(-128, 128, (2 * e1 + 2, 4), dtype=np.int8)
    wgt = rng.integers(-127, 128, (3, 4), dtype=np.int8)
    prog = _raw(_one_row_program(e1, stride, 0), np.zeros(64, np.int8))
    m = Machine(NPU_V3, prog.const_image.copy())
    m.mems[Mem.INP][: inp.size] = inp.reshape(-1)
    m.mems[Mem.WGT][: wgt.size] = wgt.reshape(-1)
    fx = None
    for insn in prog.insns:
        fx = m.execute(insn)
    acc = m.mems[Mem.ACC][: e1 * 4].reshape(e1, 4)
    taps = np.stack([inp[o * stride : o * stride + 3] for o in range(e1)]).astype(np.int64)
    want = ((taps - 1) * (wgt.astype(np.int64) + 2)).sum(axis=1)
    assert np.array_equal(acc, want)
    touched = (e1 - 1) * stride + 3  # each input pixel streamed once
    rows, cols = NPU_V3.array_rows, NPU_V3.array_cols
    assert fx.compute_cycles == touched + 2 * rows + cols - 2
    assert fx.macs == e1 * 3 * 4


def test_output_stage_matches_alu_requant() -> None:
    """GEMM rq=1 requantizes with the table exactly as ALU REQUANT would."""
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (1, 8, 6, 6), dtype=np.int8)
    w = rng.integers(-127, 128, (16, 8, 3, 3), dtype=np.int8)
    bias = rng.integers(-4000, 4000, 16).astype(np.int32)
    mult, shift = _mults(rng, 16, 72)
    prog = lower_qconv2d(
        x.shape, w, bias, mult, shift, x_zp=2, out_zp=-5, qmin=-5, qmax=90, padding=1
    )
    assert not any(i.op is Op.ALU for i in prog.insns)
    assert any(i.op is Op.GEMM and i["rq"] for i in prog.insns)
    got = simulate(prog, {"x": x}).outputs["y"]
    want = ref.qconv2d(x, w, bias, mult, shift, 2, -5, qmin=-5, qmax=90, padding=(1, 1))
    assert np.array_equal(got, want) and got.min() == -5


def test_stem_window_reduces_in_one_micro_op(rng: np.random.Generator) -> None:
    """A 3-channel 7x7 stem reduces K = 7 * 7 * 3 = 147 in one GEMM micro-op (5 folds of 32
    rows) instead of 7 kernel rows of K = 21 (7 folds)."""
    x = rng.integers(-128, 128, (1, 3, 20, 20), dtype=np.int8)
    w = rng.integers(-127, 128, (8, 3, 7, 7), dtype=np.int8)
    prog = lower_qconv2d(x.shape, w, None, 1 << 30, 40, x_zp=0, out_zp=0, stride=2, padding=3)
    gemms = [i for i in prog.insns if i.op is Op.GEMM]
    assert gemms and all(i["nuop"] == 1 for i in gemms)
    got = simulate(prog, {"x": x}).outputs["y"]
    want = ref.qconv2d(x, w, None, [1 << 30] * 8, [40] * 8, 0, 0, stride=(2, 2), padding=(3, 3))
    assert np.array_equal(got, want)


def test_dwconv_and_rq_round_trip_through_the_assembler() -> None:
    text = "DWCONV reset=1 uop=3 nuop=3 e0=4 e1=5 is0=640 is1=64 as0=160 as1=32 rq=1 +pop_prev\n"
    binary = assemble(text)
    insn = decode(binary)
    assert insn.op is Op.DWCONV and insn["rq"] == 1 and insn.pop_prev
    assert assemble(disassemble(binary)) == binary
    assert decode(assemble("GEMM rq=1"))["rq"] == 1


def _window_program(e0: int, stride: int, kr: int, row: int, krs: int | None = None) -> str:
    """e0 x 5 outputs of a 3x3 window over 4 channels; input rows of `row` pixels at INP 0."""
    krs = row * 4 if krs is None else krs
    uops = "DWCONV reset=1 uop=0 nuop=1" if kr > 1 else "DWCONV reset=1 uop=0 nuop=3"
    return f"""
    SET reg=g_ko value=3
    SET reg=g_kos value=4
    SET reg=g_n value=4
    SET reg=g_izp value=1
    SET reg=g_wzp value=-2
    SET reg=g_kr value={kr}
    SET reg=g_krs value={krs}
    {uops} e0={e0} e1=5 is0={4 * row * stride} is1={4 * stride} as0=20 as1=4 rq=0
    """


def _run_window(
    text: str,
    inp: np.ndarray,
    wgt: np.ndarray,
    uops: list[tuple[int, int, int]],
    cfg: NpuConfig = NPU_V3,
) -> tuple[np.ndarray, Effect]:
    prog = _raw(text, np.zeros(64, np.int8))
    m = Machine(cfg, prog.const_image.copy())
    m.mems[Mem.INP][: inp.size] = inp.reshape(-1)
    m.mems[Mem.WGT][: wgt.size] = wgt.reshape(-1)
    m.mems[Mem.UOP][: 3 * len(uops)] = np.asarray(uops).reshape(-1)
    fx = Effect()
    for insn in prog.insns:
        fx = m.execute(insn)
    return m.mems[Mem.ACC][:80].reshape(4, 5, 4).copy(), fx


@pytest.mark.parametrize("stride", [1, 2])
def test_line_buffer_reads_each_input_pixel_once(stride: int) -> None:
    """g_kr=3: one micro-op covers the three kernel rows; same sums as three kr=1 micro-ops,
    but each fold streams touched rows x touched columns instead of kh x rows x columns."""
    rng = np.random.default_rng(11)
    e0, row = 4, 2 * 5 + 2
    rows_in = (e0 - 1) * stride + 3
    inp = rng.integers(-128, 128, (rows_in, row, 4), dtype=np.int8)
    wgt = rng.integers(-127, 128, (3, 3, 4), dtype=np.int8)
    got, fx = _run_window(_window_program(e0, stride, 3, row), inp, wgt, [(0, 0, 0)])
    per_row = [(0, r * row * 4, r * 12) for r in range(3)]
    old, fx_old = _run_window(_window_program(e0, stride, 1, row), inp, wgt, per_row)
    x = inp.astype(np.int64) - 1
    want = np.zeros((e0, 5, 4), np.int64)
    for oy in range(e0):
        for ox in range(5):
            win = x[oy * stride : oy * stride + 3, ox * stride : ox * stride + 3]
            want[oy, ox] = (win * (wgt.astype(np.int64) + 2)).sum(axis=(0, 1))
    assert np.array_equal(got, want) and np.array_equal(old, want)
    cols = (5 - 1) * stride + 3
    rows, acols = NPU_V3.array_rows, NPU_V3.array_cols
    assert fx.compute_cycles == rows_in * cols + 2 * rows + acols - 2
    # three folds without shadow weights: each pays preload + fill + drain (SCALE-Sim)
    assert fx_old.compute_cycles == 3 * (e0 * cols + 2 * rows + acols - 2)
    # chained through the shadow weight registers: max(M, C + 1) between fold starts
    _, fx_chain = _run_window(
        "SET reg=g_wdb value=1\n" + _window_program(e0, stride, 1, row), inp, wgt, per_row
    )
    m = e0 * cols
    assert fx_chain.compute_cycles == rows + 2 * max(m, acols + 1) + m + rows + acols - 2
    assert fx.macs == fx_old.macs == e0 * 5 * 9 * 4
    # line buffer: one write and kr - 1 reads per streamed pixel, charged as SRAM traffic
    streamed = rows_in * cols * 4
    assert fx.sram_bytes == streamed + 3 * streamed + 9 * 4 + 8 * e0 * 5 * 4


@pytest.mark.parametrize(
    "kr,row,krs,cfg,message",
    [
        (8, 12, None, NPU_V3, "exceed the 7 x 128 line buffer"),
        (3, 12, None, config_from_dict({"dw_line_cols": 6}), "7 pixels exceed the 7 x 6"),
        (3, 12, 4 * 12 * 2, NPU_V3, "g_krs=96 <= is0=48"),
        (3, 12, None, config_from_dict({"array_rows": 8}), "3 \\* 3 taps exceed the 8"),
    ],
)
def test_line_buffer_limits_raise(
    kr: int, row: int, krs: int | None, cfg: NpuConfig, message: str
) -> None:
    inp = np.zeros((12, row, 4), np.int8)
    with pytest.raises(ScratchpadBoundsError, match=message):
        _run_window(_window_program(2, 1, kr, row, krs), inp, np.zeros((8, 3, 4)), [(0, 0, 0)], cfg)


def test_lowering_uses_the_line_buffer_only_without_dilation(rng: np.random.Generator) -> None:
    for case, kr in (("3x3_s1", 3), ("3x3_s2_odd", 3), ("5x5_dilation2", 0)):
        prog, _, _ = _dw(rng, case)
        dw = [i for i in prog.insns if i.op is Op.DWCONV]
        sets = {
            i["value"] for i in prog.insns if i.op is Op.SET and i["reg"] == REGISTERS["g_kr"][0]
        }
        assert sets == ({kr} if kr else set())
        assert all(i["nuop"] == (1 if kr else 5) for i in dw)


def test_narrow_line_buffer_narrows_the_tiles(rng: np.random.Generator) -> None:
    """A 10-pixel line buffer forces <= 8 output columns per tile; still bit-exact."""
    cfg = config_from_dict({"dw_line_cols": 10})
    x = rng.integers(-128, 128, (1, 8, 9, 30), dtype=np.int8)
    w = rng.integers(-127, 128, (8, 1, 3, 3), dtype=np.int8)
    mult, shift = _mults(rng, 8, 9)
    prog = lower_qconv2d(
        x.shape, w, None, mult, shift, x_zp=1, out_zp=0, padding=1, groups=8, target=cfg
    )
    assert prog.info["tiling"].ow_t <= 8
    assert any(i.op is Op.SET and i["reg"] == REGISTERS["g_kr"][0] for i in prog.insns)
    want = ref.qconv2d(x, w, None, mult, shift, 1, 0, padding=(1, 1), groups=8)
    assert np.array_equal(simulate(prog, {"x": x}).outputs["y"], want)


def test_line_buffer_registers_round_trip() -> None:
    text = "SET reg=g_kr value=3\nSET reg=g_krs value=-7\n"
    assert disassemble(assemble(text)) == text
    assert NPU_V3.dw_line_bytes == 7 * 128 * 32
    with pytest.raises(ValueError, match="dw_line_rows must be a positive int"):
        config_from_dict({"dw_line_rows": 0})


def test_tiler_charges_a_narrow_channel_tail_a_full_burst() -> None:
    """64 + 32 channel slices of a 96-channel NHWC pixel cost 2 bursts of 64 bytes, not 1.5."""
    from cuvil_kernels_npu_sim.tiling import _split_factor

    assert _split_factor([64, 32], 56, NPU_V3) == 128 / 96
    assert _split_factor([96], 56, NPU_V3) == 1.0
