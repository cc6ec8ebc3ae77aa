"""Simulator checks: dependence tokens (hazards, randomized interleaving, deadlock), accumulator
overflow, scratchpad bounds, timing overlap, metrics and the trace."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from cuvil_kernels_npu_sim import (
    NPU_V3,
    AccumulatorOverflowError,
    DeadlockError,
    HazardError,
    Insn,
    Program,
    Region,
    ScratchpadBoundsError,
    config_from_dict,
    layer_metrics,
    lower_qconv2d,
    parse_program,
    simulate,
    trace_text,
)
from cuvil_kernels_npu_sim.isa import Queue

SMALL = config_from_dict({"inp_bytes": 4096, "wgt_bytes": 4096, "acc_bytes": 8192})


def _conv(rng: np.random.Generator) -> tuple[Program, np.ndarray]:
    x = rng.integers(-128, 128, (1, 16, 20, 20), dtype=np.int8)
    w = rng.integers(-127, 128, (16, 16, 3, 3), dtype=np.int8)
    prog = lower_qconv2d(x.shape, w, None, 1 << 30, 38, x_zp=1, out_zp=0, padding=1, target=SMALL)
    return prog, x


def _drop(prog: Program, queue: Queue, flag: str) -> Program:
    """Clear `flag` on every instruction of `queue`."""
    insns = tuple(
        Insn(
            i.op,
            i.args,
            **{
                f: getattr(i, f) and not (i.queue is queue and f == flag)
                for f in ("pop_prev", "pop_next", "push_prev", "push_next")
            },
        )
        for i in prog.insns
    )
    return dataclasses.replace(prog, insns=insns)


def test_random_interleavings_of_a_correct_program_agree(rng: np.random.Generator) -> None:
    prog, x = _conv(rng)
    want = simulate(prog, {"x": x}).outputs["y"]
    for seed in range(3):
        res = simulate(prog, {"x": x}, mode="random", seed=seed)
        assert np.array_equal(res.outputs["y"], want)
        assert res.stats.leftover_tokens == 0


def test_dropped_buffer_free_token_is_caught(rng: np.random.Generator) -> None:
    prog, x = _conv(rng)
    want = simulate(prog, {"x": x}).outputs["y"]
    # Remove compute -> load "buffer free" tokens: loads may overwrite a tile still in use.
    broken = _drop(_drop(prog, Queue.LOAD, "pop_next"), Queue.COMPUTE, "push_prev")
    with pytest.raises(HazardError, match="no dependence token"):
        simulate(broken, {"x": x})
    wrong = [
        not np.array_equal(
            simulate(broken, {"x": x}, mode="random", seed=s, check_hazards=False).outputs["y"],
            want,
        )
        for s in range(8)
    ]
    assert any(wrong)


def test_missing_push_deadlocks_with_a_named_instruction(rng: np.random.Generator) -> None:
    prog, x = _conv(rng)
    broken = _drop(prog, Queue.STORE, "push_prev")
    with pytest.raises(DeadlockError, match="COMPUTE queue at .*instruction #"):
        simulate(broken, {"x": x})


def _raw(text: str, dram: np.ndarray) -> Program:
    region = Region("d", 0, (dram.size,), "int8", "const")
    return Program("raw", NPU_V3, tuple(parse_program(text)), {"d": region}, dram.view(np.uint8), 0)


def test_accumulator_overflow_is_asserted() -> None:
    text = """
    SET reg=ld_ystride value=4
    SET reg=ld_xstride value=4
    LOAD mem=ACC dtype=I8 sram=0 dram=0 y=1 x=1 c=4
    SET reg=a_cols value=4
    SET reg=a_imm value=1073741824
    ALU aluop=MUL src=IMM uop=0 nuop=1 e0=1 e1=1 ds0=4 ds1=4
    """
    with pytest.raises(AccumulatorOverflowError, match="MUL result range.*int32"):
        simulate(_raw(text, np.array([1, 2, 3, 4], np.int8)), {})


def test_scratchpad_bounds_are_asserted() -> None:
    text = "LOAD mem=INP dtype=I8 sram=262140 dram=0 y=1 x=1 c=8"
    with pytest.raises(ScratchpadBoundsError, match="INP access .* outside"):
        simulate(_raw(text, np.zeros(8, np.int8)), {})


def test_timing_overlaps_queues_and_reports_metrics(rng: np.random.Generator) -> None:
    prog, x = _conv(rng)
    res = simulate(prog, {"x": x}, keep_trace=True)
    busy = res.stats.busy
    assert res.stats.cycles < busy["load"] + busy["compute"] + busy["store"]
    m = layer_metrics(res)
    assert m["cycles"] >= m["roofline_cycles"] > 0
    assert 0 < m["mac_utilization"] <= 1 and m["energy_pj"] > 0 and m["power_w"] > 0
    assert res.stats.macs >= prog.macs == 20 * 20 * 16 * 16 * 9
    text = trace_text(res)
    assert len(text.splitlines()) == len(prog.insns) + 1 and "GEMM" in text
