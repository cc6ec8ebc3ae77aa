"""The `npu-v3` instruction set: opcodes, operand fields, and the fixed 128-bit binary encoding.

Every instruction is one 128-bit little-endian word. Bits 0-3 hold the opcode, bits 4-7 the
dependence-token flags (`pop_prev`, `pop_next`, `push_prev`, `push_next`), then the opcode's fields
in the order of `FIELDS[op]` (LSB first). Rarely changing operands (DRAM strides, GEMM reduction
shape, zero points, ALU constants) live in per-queue registers written by `SET`, which keeps every
instruction within 128 bits.

Queues (VTA-style): LOAD runs on the load queue, GEMM/DWCONV/ALU/SFU/FINISH on the compute queue,
STORE on the store queue; SET and NOP run on the queue their register / `queue` field names. The
load queue's "next" is compute; compute's "prev" is load and "next" is store; store's "prev" is
compute.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Op(enum.IntEnum):
    NOP = 0
    SET = 1
    LOAD = 2
    STORE = 3
    GEMM = 4
    ALU = 5
    FINISH = 6
    DWCONV = 7
    SFU = 8


class Queue(enum.IntEnum):
    LOAD = 0
    COMPUTE = 1
    STORE = 2


class Mem(enum.IntEnum):
    """Scratchpads. INP/WGT hold int8 bytes; ACC/TBL int32 words; UOP 3 int32 words per micro-op."""

    INP = 0
    WGT = 1
    ACC = 2
    TBL = 3
    UOP = 4


class DType(enum.IntEnum):
    I8 = 0
    I32 = 1


class AluOp(enum.IntEnum):
    MOV = 0
    ADD = 1
    MAX = 2
    MIN = 3
    SHR = 4
    MUL = 5
    CLAMP = 6
    REQUANT = 7
    REQADD = 8


class SfuFn(enum.IntEnum):
    """Special-function unit row operations (docs/semantics.md §11)."""

    LUT = 0  # dst = TBL[tbl + src + 128]
    SOFTMAX = 1  # per row, exp table at TBL[tbl], probabilities at scale 2**-8, zp -128
    LAYERNORM = 2  # per row, per-channel [M, shift, sign, beta_q] at TBL[tbl]


class Src(enum.IntEnum):
    """Second ALU operand: an ACC view, a TBL view, or the `a_imm` register."""

    ACC = 0
    TBL = 1
    IMM = 2


# Register name -> (register id, queue). `SET reg=... value=...` writes one 32-bit signed value.
REGISTERS: dict[str, tuple[int, Queue]] = {
    "ld_ystride": (0, Queue.LOAD),  # DRAM bytes between rows of a LOAD box
    "ld_xstride": (1, Queue.LOAD),  # DRAM bytes between columns (pixels) of a LOAD box
    "ld_pad": (2, Queue.LOAD),  # value written into padding positions
    "st_ystride": (3, Queue.STORE),
    "st_xstride": (4, Queue.STORE),
    "g_ki": (5, Queue.COMPUTE),  # GEMM: contiguous reduction run (elements)
    "g_ko": (6, Queue.COMPUTE),  # GEMM: number of runs per reduction
    "g_kos": (7, Queue.COMPUTE),  # GEMM: INP stride between runs
    "g_n": (8, Queue.COMPUTE),  # GEMM: output columns (WGT row length)
    "g_izp": (9, Queue.COMPUTE),  # GEMM: input zero point (subtracted from INP)
    "g_wzp": (10, Queue.COMPUTE),  # GEMM: weight zero point (subtracted from WGT)
    "a_cols": (11, Queue.COMPUTE),  # ALU: contiguous columns per row
    "a_imm": (12, Queue.COMPUTE),
    "a_zp": (13, Queue.COMPUTE),  # REQUANT/REQADD output zero point
    "a_lo": (14, Queue.COMPUTE),  # clamp bounds
    "a_hi": (15, Queue.COMPUTE),
    "a_ma": (16, Queue.COMPUTE),  # REQADD multipliers, shared shift and input zero points
    "a_mb": (17, Queue.COMPUTE),
    "a_shift": (18, Queue.COMPUTE),
    "a_zpa": (19, Queue.COMPUTE),
    "a_zpb": (20, Queue.COMPUTE),
    "g_tbl": (21, Queue.COMPUTE),  # GEMM/DWCONV rq=1: TBL word address of [bias, M, shift]
    "g_kr": (22, Queue.COMPUTE),  # DWCONV: kernel rows per micro-op via the line buffer (0 = 1)
    "g_krs": (23, Queue.COMPUTE),  # DWCONV: INP stride between those kernel rows
    "g_wdb": (24, Queue.COMPUTE),  # GEMM/DWCONV: 1 chains folds through the shadow weights
    "s_eps": (25, Queue.COMPUTE),  # SFU LAYERNORM: eps_q (variance floor, integer domain)
}
REGISTER_NAMES: dict[int, str] = {rid: name for name, (rid, _) in REGISTERS.items()}

# GEMM and DWCONV share their operand fields; `rq` (the last bit of the word) requantizes the
# finished accumulators in the array's output stage (see machine.py).
_ARRAY_FIELDS = (
    ("reset", 1, False),
    ("uop", 12, False),
    ("nuop", 12, False),
    ("e0", 11, False),
    ("e1", 11, False),
    ("is0", 20, False),
    ("is1", 20, False),
    ("as0", 16, False),
    ("as1", 16, False),
    ("rq", 1, False),
)

# (name, width in bits, signed) per opcode, after the 8 header bits.
FIELDS: dict[Op, tuple[tuple[str, int, bool], ...]] = {
    Op.NOP: (("queue", 2, False),),
    Op.SET: (("reg", 6, False), ("value", 32, True)),
    Op.LOAD: (
        ("mem", 3, False),
        ("dtype", 1, False),
        ("sram", 20, False),
        ("dram", 32, False),
        ("y", 10, False),
        ("x", 10, False),
        ("c", 12, False),
        ("pt", 3, False),
        ("pb", 3, False),
        ("pl", 3, False),
        ("pr", 3, False),
    ),
    Op.STORE: (
        ("mem", 3, False),
        ("dtype", 1, False),
        ("sram", 20, False),
        ("dram", 32, False),
        ("y", 10, False),
        ("x", 10, False),
        ("c", 12, False),
    ),
    Op.GEMM: _ARRAY_FIELDS,
    Op.DWCONV: _ARRAY_FIELDS,
    Op.ALU: (
        ("aluop", 4, False),
        ("src", 2, False),
        ("uop", 12, False),
        ("nuop", 12, False),
        ("e0", 11, False),
        ("e1", 11, False),
        ("ds0", 16, False),
        ("ds1", 16, False),
        ("ss0", 16, False),
        ("ss1", 16, False),
    ),
    Op.FINISH: (),
    Op.SFU: (
        ("fn", 4, False),
        ("dst", 16, False),
        ("src", 16, False),
        ("tbl", 12, False),
        ("rows", 11, False),
        ("cols", 12, False),
        ("stride", 16, False),
    ),
}
ENUM_FIELDS: dict[str, type[enum.IntEnum]] = {
    "queue": Queue,
    "mem": Mem,
    "dtype": DType,
    "aluop": AluOp,
    "src": Src,
    "fn": SfuFn,
}
FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
WORD_BITS = 128
WORD_BYTES = WORD_BITS // 8

for _op, _fields in FIELDS.items():
    assert 8 + sum(w for _, w, _ in _fields) <= WORD_BITS, _op


class EncodingError(ValueError):
    """An instruction field does not fit its bit width, or a word does not decode."""


@dataclass(frozen=True)
class Insn:
    """One instruction: opcode, token flags and the opcode's fields (all ints)."""

    op: Op
    args: dict[str, int] = field(default_factory=dict)
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    def __getitem__(self, name: str) -> int:
        return self.args[name]

    @property
    def queue(self) -> Queue:
        return queue_of(self)


def queue_of(insn: Insn) -> Queue:
    """The queue an instruction runs on."""
    if insn.op is Op.LOAD:
        return Queue.LOAD
    if insn.op is Op.STORE:
        return Queue.STORE
    if insn.op is Op.SET:
        return REGISTERS[REGISTER_NAMES[insn.args["reg"]]][1]
    if insn.op is Op.NOP:
        return Queue(insn.args["queue"])
    return Queue.COMPUTE


def make(op: Op, **args: int) -> Insn:
    """Build an instruction; missing fields default to 0, unknown fields raise."""
    names = [n for n, _, _ in FIELDS[op]]
    unknown = sorted(set(args) - set(names))
    if unknown:
        raise EncodingError(f"{op.name}: unknown fields {unknown}; fields are {names}")
    return Insn(op, {n: int(args.get(n, 0)) for n in names})


def encode(insn: Insn) -> bytes:
    """Encode one instruction into a 16-byte little-endian word."""
    word = int(insn.op)
    for bit, flag in enumerate(FLAGS):
        word |= int(getattr(insn, flag)) << (4 + bit)
    pos = 8
    for name, width, signed in FIELDS[insn.op]:
        value = insn.args.get(name, 0)
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
        if not lo <= value <= hi:
            raise EncodingError(
                f"{insn.op.name}.{name}={value} does not fit {width} bits ([{lo}, {hi}]); "
                "split the transfer or use a smaller tile"
            )
        word |= (value & ((1 << width) - 1)) << pos
        pos += width
    return word.to_bytes(WORD_BYTES, "little")


def decode(data: bytes) -> Insn:
    """Decode one 16-byte word."""
    if len(data) != WORD_BYTES:
        raise EncodingError(f"an instruction word is {WORD_BYTES} bytes, got {len(data)}")
    word = int.from_bytes(data, "little")
    code = word & 0xF
    if code not in Op._value2member_map_:
        raise EncodingError(f"unknown opcode {code}; opcodes are {[o.name for o in Op]}")
    op = Op(code)
    flags = {flag: bool((word >> (4 + bit)) & 1) for bit, flag in enumerate(FLAGS)}
    args: dict[str, int] = {}
    pos = 8
    for name, width, signed in FIELDS[op]:
        value = (word >> pos) & ((1 << width) - 1)
        if signed and value >> (width - 1):
            value -= 1 << width
        args[name] = value
        pos += width
    if word >> pos:
        raise EncodingError(f"{op.name}: reserved bits above bit {pos} are set")
    return Insn(op, args, **flags)


def encode_program(insns: list[Insn]) -> bytes:
    return b"".join(encode(i) for i in insns)


def decode_program(data: bytes) -> list[Insn]:
    if len(data) % WORD_BYTES:
        raise EncodingError(f"program size {len(data)} is not a multiple of {WORD_BYTES} bytes")
    return [decode(data[i : i + WORD_BYTES]) for i in range(0, len(data), WORD_BYTES)]
