"""Hostile IR text ends in a bounded ParseError: each input found so far, the printer refusing
what the parser would refuse, and a hypothesis fuzz of the parser."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuvil_ref.errors import MAX_MESSAGE, IRError, ParseError
from cuvil_ref.ir import Graph, Module
from cuvil_ref.ir.parser import parse_module
from cuvil_ref.ir.printer import MAX_NESTING, print_module
from tests.fuzzing.campaign import check_text
from tests.fuzzing.seeds import seed_texts
from tests.fuzzing.text_mutations import mutate_text

EMPTY = "  func @main() -> () {\n    return\n  }\n}\n"


def _meta(value: str) -> str:
    return f"module @m attributes {{p = {value}}} {{\n{EMPTY}"


HOSTILE = {
    "NaN payload over 64 bits": (_meta("nan(0x" + "f" * 40 + ")"), "is not a NaN"),
    "NaN payload without digits": (_meta("nan(0x)"), "is not a NaN"),
    "NaN bits of a finite number": (_meta("nan(0x3ff0000000000000)"), "is not a NaN"),
    "parentheses 1000 deep": (_meta("(" * 1000 + ")" * 1000), "nest more than 32"),
    "dicts 600 deep": (_meta("{a = " * 600 + "1" + "}" * 600), "nest more than 32"),
    "integer of 5000 digits": (_meta("9" * 5000), "too long"),
    "dimension of 5000 digits": (
        "module @m {\n  func @main(%x : f32[" + "9" * 5000 + "]) -> () {\n    return\n  }\n}\n",
        "too long",
    ),
    "dimension over 2**63": (
        "module @m {\n  func @main(%x : f32[9223372036854775808]) -> () {\n    return\n  }\n}\n",
        "out of range",
    ),
    "zero point over 64 bits": (
        "module @m {\n  func @main(%x : i8[2]q<0.5:18446744073709551616>) -> () {\n"
        "    return\n  }\n}\n",
        "does not fit in 64 bits",
    ),
    "a line of a million characters": (_meta('"' + "x" * 1_000_000 + '" junk'), "expected"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_is_a_bounded_parse_error(name: str) -> None:
    text, message = HOSTILE[name]
    with pytest.raises(ParseError, match=message) as info:
        parse_module(text)
    assert len(str(info.value)) <= 2000  # the line is shown as a window around the column


def test_deepest_nesting_the_printer_writes_parses() -> None:
    value: object = 1
    for _ in range(MAX_NESTING):
        value = (value,)
    text = print_module(Module(Graph((), (), ()), "m", {"p": value}))
    assert parse_module(text).metadata["p"] == value
    with pytest.raises(IRError, match="nests more than"):
        print_module(Module(Graph((), (), ()), "m", {"p": (value,)}))


def test_printer_refuses_integers_the_parser_would_refuse() -> None:
    assert parse_module(print_module(Module(Graph((), (), ()), "m", {"p": 2**70}))).metadata == {
        "p": 2**70
    }
    with pytest.raises(IRError, match="digits has no textual form"):
        print_module(Module(Graph((), (), ()), "m", {"p": 10**70}))


def test_error_messages_are_bounded() -> None:
    with pytest.raises(ParseError) as info:
        parse_module(_meta("@" + "y" * 200_000))
    assert len(str(info.value)) <= MAX_MESSAGE


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(seed_texts()) - 1), st.randoms(use_true_random=False))
def test_fuzzed_texts_end_in_typed_errors(seed: int, rng: object) -> None:
    """The CI slice of the campaign (``python -m tests.fuzzing.campaign``, docs/ir.md)."""
    check_text(mutate_text(seed_texts()[seed], rng))
