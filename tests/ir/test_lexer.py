"""The textual IR's lexer: tokens, comments by line, positions and bounded errors."""

from __future__ import annotations

import pytest

from cuvil_ref.errors import ParseError
from cuvil_ref.ir.lexer import Source, TokenCursor, lex
from cuvil_ref.ir.printer import MAX_NUMBER_CHARS


def test_tokens_and_comments() -> None:
    tokens, comments = lex(Source('%x = add(%"a b", 1.5e3) // sha\n@main -> 0x0f "s\\n"', "t"))
    kinds = [(t.kind, t.text) for t in tokens]
    assert kinds == [
        ("value", "x"), ("punct", "="), ("ident", "add"), ("punct", "("), ("value", "a b"),
        ("punct", ","), ("number", "1.5e3"), ("punct", ")"), ("symbol", "main"),
        ("arrow", "->"), ("hex", "0x0f"), ("string", "s\n"), ("eof", ""),
    ]  # fmt: skip
    assert comments == {1: "// sha"}
    assert (tokens[8].line, tokens[8].col) == (2, 1)


@pytest.mark.parametrize(
    "text, message",
    [
        ("%x $", "t:1:4: unexpected character '$'"),
        ('%x "open', "t:1:4: unterminated string"),
        ("1" * (MAX_NUMBER_CHARS + 1), "too long"),
        ('"\\q"', "unknown escape"),
    ],
)
def test_errors_name_the_position(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message.replace("$", r"\$")):
        lex(Source(text, "t"))


def test_long_lines_are_shown_as_a_window() -> None:
    err = Source("x" * 5000 + " $", "t").error_at(1, 5002, "bad")
    assert len(str(err)) < 400 and str(err).rstrip().endswith("^")


def test_cursor_expect_says_what_it_found() -> None:
    cur = TokenCursor(Source("module @m", "t"))
    assert cur.expect("ident", "module").text == "module"
    with pytest.raises(ParseError, match="expected '{', got 'm'"):
        cur.punct("{")
