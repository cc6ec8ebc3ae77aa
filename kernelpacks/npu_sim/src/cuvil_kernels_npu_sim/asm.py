"""Assembler (text -> instructions / binary) and disassembler (binary -> text).

One instruction per line: `OPNAME key=value ... [+pop_prev] [+pop_next] [+push_prev] [+push_next]`.
Enumerated fields print by name (`mem=INP`, `aluop=REQUANT`), `SET`'s register by name
(`reg=ld_ystride`). `#` starts a comment. `disassemble(assemble(text))` is the canonical form, and
`assemble(disassemble(b)) == b` for every valid binary.
"""

from __future__ import annotations

from cuvil_kernels_npu_sim.isa import (
    ENUM_FIELDS,
    FIELDS,
    FLAGS,
    REGISTER_NAMES,
    REGISTERS,
    EncodingError,
    Insn,
    Op,
    decode_program,
    encode_program,
)


class AsmError(ValueError):
    """A line of assembly text does not parse."""


def format_insn(insn: Insn) -> str:
    parts = [insn.op.name]
    for name, _, _ in FIELDS[insn.op]:
        value = insn.args.get(name, 0)
        if name in ENUM_FIELDS and value in ENUM_FIELDS[name]._value2member_map_:
            text = ENUM_FIELDS[name](value).name
        elif insn.op is Op.SET and name == "reg" and value in REGISTER_NAMES:
            text = REGISTER_NAMES[value]
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    parts += [f"+{flag}" for flag in FLAGS if getattr(insn, flag)]
    return " ".join(parts)


def parse_insn(line: str, lineno: int = 1) -> Insn:
    words = line.split()
    where = f"line {lineno} ({line.strip()!r})"
    if not words or words[0] not in Op.__members__:
        raise AsmError(f"{where}: unknown opcode; opcodes are {list(Op.__members__)}")
    op = Op[words[0]]
    names = [n for n, _, _ in FIELDS[op]]
    args: dict[str, int] = dict.fromkeys(names, 0)
    flags = dict.fromkeys(FLAGS, False)
    for word in words[1:]:
        if word.startswith("+"):
            if word[1:] not in flags:
                raise AsmError(f"{where}: unknown token flag {word!r}; flags are {list(FLAGS)}")
            flags[word[1:]] = True
            continue
        key, sep, text = word.partition("=")
        if not sep or key not in args:
            raise AsmError(f"{where}: expected key=value with key in {names}, got {word!r}")
        enum_type = ENUM_FIELDS.get(key)
        if enum_type is not None and text in enum_type.__members__:
            args[key] = int(enum_type[text])
        elif op is Op.SET and key == "reg" and text in REGISTERS:
            args[key] = REGISTERS[text][0]
        else:
            try:
                args[key] = int(text, 0)
            except ValueError:
                raise AsmError(f"{where}: {key}={text!r} is not an integer or known name") from None
    return Insn(op, args, **flags)


def parse_program(text: str) -> list[Insn]:
    insns = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            insns.append(parse_insn(line, lineno))
    return insns


def assemble(text: str) -> bytes:
    """Text -> binary (16 bytes per instruction)."""
    try:
        return encode_program(parse_program(text))
    except EncodingError as err:
        raise AsmError(f"assemble: {err}") from err


def disassemble(data: bytes) -> str:
    """Binary -> text, one instruction per line."""
    return "".join(format_insn(i) + "\n" for i in decode_program(data))
