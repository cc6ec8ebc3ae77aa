"""Binary encoding and assembler: exact round trips and clear errors."""

from __future__ import annotations

import pytest
from cuvil_kernels_npu_sim import Insn, Op, assemble, decode, disassemble, encode
from cuvil_kernels_npu_sim.asm import AsmError
from cuvil_kernels_npu_sim.isa import FIELDS, FLAGS, WORD_BYTES, EncodingError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@st.composite
def insns(draw: st.DrawFn) -> Insn:
    op = draw(st.sampled_from(list(Op)))
    args = {}
    for name, width, signed in FIELDS[op]:
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
        args[name] = draw(st.integers(lo, hi))
    flags = {f: draw(st.booleans()) for f in FLAGS}
    return Insn(op, args, **flags)


@settings(suppress_health_check=[HealthCheck.too_slow])  # a shared, loaded machine
@given(st.lists(insns(), min_size=1, max_size=8))
def test_binary_and_text_round_trip(program: list[Insn]) -> None:
    binary = b"".join(encode(i) for i in program)
    assert len(binary) == WORD_BYTES * len(program)
    assert [decode(binary[i : i + 16]) for i in range(0, len(binary), 16)] == program
    text = disassemble(binary)
    assert assemble(text) == binary
    assert disassemble(assemble(text)) == text


def test_assembler_reads_names_and_flags() -> None:
    text = (
        "SET reg=ld_ystride value=-4  # comment\n"
        "LOAD mem=ACC dtype=I8 sram=16 dram=0x40 y=2 x=3 c=4 pt=1 +pop_next +push_next\n"
    )
    first, second = (decode(w) for w in (assemble(text)[:16], assemble(text)[16:]))
    assert first.args["value"] == -4
    assert second.op is Op.LOAD and second.pop_next and second.push_next
    assert second.args["dram"] == 64 and second.args["pt"] == 1


def test_errors_name_the_problem() -> None:
    with pytest.raises(AsmError, match="unknown opcode"):
        assemble("JUMP x=1")
    with pytest.raises(AsmError, match="line 1.*key=value"):
        assemble("GEMM bogus=1")
    with pytest.raises(AsmError, match=r"GEMM\.e0=4096 does not fit 11 bits"):
        assemble("GEMM e0=4096")
    with pytest.raises(EncodingError, match="unknown opcode 15"):
        decode(bytes([15]) + bytes(15))
