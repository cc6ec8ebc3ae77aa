"""Mutations of textual IR: token edits, hostile literals, deep nesting, truncation, stray bytes.

Each mutator takes a ``random.Random`` so a case is reproducible from its seed (the campaign) and
hypothesis can drive and shrink it (``st.randoms()`` in the CI tests).
"""

from __future__ import annotations

import random
import re

_TOKENS = re.compile(r'\s+|"(?:[^"\\\n]|\\.)*"|[%@]?[A-Za-z0-9_.]+|->|.', re.DOTALL)

#: Literals that broke or could break a parser: deep nesting, huge and odd numbers, bad escapes.
HOSTILE = (
    "(" * 1000 + ")" * 1000,
    "{a = " * 600 + "1" + "}" * 600,
    "(" * 33 + ")" * 33,
    "9" * 5000,
    "-" + "9" * 70,
    "18446744073709551616",
    "9223372036854775808",
    "1e400",
    "-1e400",
    "1.5e-400",
    "nan(0x" + "f" * 40 + ")",
    "nan(0x)",
    "nan(0x1)",
    "nan(0x7ff0000000000000)",
    "-nan(0xfff8000000000001)",
    "0x",
    "0xZZ",
    '"unterminated',
    '"\\u{110000}"',
    '"\\u{d800}"',
    '"\\q"',
    "\\",
    "inf",
    "-inf",
    "-",
    "%",
    "@",
    "q<",
    "q<axis=9;0.5:1>",
    "q<0.5,0.25:1>",
    "q<nan:0>",
    "q<0.0:0>",
    "q<-1.0:999>",
    "f32[",
    "f32[-1]",
    "f32[99999999999999999999]",
    "f99[2]",
    "]",
    "@NHWC",
    "@",
    "dense<0x00>",
    "dense<[1, 2, 3]>",
    "dense<[nan, -inf, 1e400]>",
    "dense<[true]>",
    "dense_resource<w>",
    "dense_resource<>",
    "loc(",
    'loc("a", module="b", module="c")',
    "->",
    "return",
    "func @main() -> () {",
    "func @other(%x : f32[2]) -> (f32[2]) { return %x }",
    "const %c : f32[2] = dense<[1.0, 2.0]>",
    "const %c : f32[n] = dense<[1.0]>",
    "%x",
    "%undefined",
    "%x : f32[2] = relu(%x)",
    "relu(%x) {alpha = 1}",
    "fused_elementwise(%x) {program = \"relu; __import__('os')\"}",
    'fused_elementwise(%x) {program = ""}',
    "fused_elementwise(%x) {program = \"mul(rhs=1e400, dtype='f99')\"}",
    '{program = "' + "relu; " * 2000 + 'relu"}',
    "conv2d",
    "reshape",
    "{shape = (-1, -1)}",
    "{shape = (" + "9" * 60 + ",)}",
    "{axis = 99}",
    "{perm = (0, 0)}",
    '{dtype = "f99"}',
    "\x00",
    "\ud800",
    "\u202e",
    "卷积",
    "true",
    "none",
    "module @m {",
    "}",
    "{",
    ")",
    ",",
    ":",
    "=",
    "//",
    "// sha256:" + "0" * 64,
    "\n",
)


def tokens(text: str) -> list[str]:
    return _TOKENS.findall(text)


def _number(rng: random.Random) -> str:
    return rng.choice(
        ["0", "-1", "1", "2", "3", "7", "64", "255", "-128", "2147483648", "1.0", "-0.0", "0.5"]
        + ["1e30", "4294967296", "65536"]
    )


def mutate_once(text: str, rng: random.Random) -> str:
    """One random edit of ``text``."""
    toks = tokens(text) or [""]
    i = rng.randrange(len(toks))
    kind = rng.randrange(10)
    if kind == 0:  # delete a token
        del toks[i]
    elif kind == 1:  # duplicate a token
        toks.insert(i, toks[i])
    elif kind == 2:  # swap two tokens
        j = rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == 3:  # replace by a hostile literal
        toks[i] = rng.choice(HOSTILE)
    elif kind == 4:  # insert a hostile literal
        toks.insert(i, " " + rng.choice(HOSTILE) + " ")
    elif kind == 5:  # replace by a token from elsewhere
        toks[i] = rng.choice(toks)
    elif kind == 6:  # change a number
        numbers = [k for k, t in enumerate(toks) if re.fullmatch(r"-?\d[\d.eE+-]*", t)]
        if numbers:
            toks[rng.choice(numbers)] = _number(rng)
    elif kind == 7:  # truncate
        return "".join(toks)[: rng.randrange(len(text) + 1)]
    elif kind == 8:  # a stray character
        pos = rng.randrange(len(text) + 1)
        ch = chr(rng.choice([0, 7, 10, 34, 37, 40, 41, 60, 62, 92, 123, 125, 0xFF, 0x2028]))
        return text[:pos] + ch + text[pos:]
    else:  # swap an op name or dtype for another valid one
        names = ["relu", "add", "conv2d", "linear", "qlinear", "quantize", "reshape", "split"]
        dtypes = ["f32", "f16", "bf16", "i8", "u8", "i32", "i64", "bool", "f64"]
        toks[i] = rng.choice(names + dtypes)
    return "".join(toks)


def mutate_text(text: str, rng: random.Random) -> str:
    """One to four random edits of ``text``."""
    for _ in range(rng.randint(1, 4)):
        text = mutate_once(text, rng)
    return text
