"""The lexer of the textual IR: source positions, error messages with a caret, and tokens.

:func:`lex` turns text into :class:`Token` s (names and strings unescaped, numbers as written)
and the comments by line (a ``dense_resource`` constant's comment carries its sha256). Every
error is a :class:`~cuvil_ref.errors.ParseError` saying ``<source>:line:column``, the offending
line (a window of it, for long lines) and a caret. A number is at most
:data:`~cuvil_ref.ir.printer.MAX_NUMBER_CHARS` characters.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from cuvil_ref.errors import ParseError, shorten
from cuvil_ref.ir.printer import MAX_NUMBER_CHARS

_SHOWN_LINE = 120

_NAME = r'(?:[A-Za-z0-9_][A-Za-z0-9_.]*|"(?:[^"\\\n]|\\.)*")'
_TOKEN = re.compile(
    rf"""(?P<ws>[ \t\r\n]+)
    |(?P<comment>//[^\n]*)
    |(?P<value>%{_NAME})
    |(?P<symbol>@{_NAME})
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<hex>0x[0-9A-Fa-f]*)
    |(?P<number>-?(?:\d+\.\d*|\d+)(?:[eE][+-]?\d+)?)
    |(?P<arrow>->)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
    |(?P<punct>[{{}}()\[\]<>,=:;-])""",
    re.VERBOSE,
)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class Token:
    kind: str  # value symbol string hex number arrow ident punct eof
    text: str  # names and strings decoded; everything else as written
    line: int
    col: int

    def show(self) -> str:
        return "end of input" if self.kind == "eof" else shorten(repr(self.text), 60)


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        m = re.match(r"u\{([0-9A-Fa-f]{1,6})\}", body[i + 1 :])
        if not m:
            raise ValueError(f"unknown escape '\\{nxt}' (use \\\\ \\\" \\n \\t \\r or \\u{{HEX}})")
        out.append(chr(int(m.group(1), 16)))
        i += 1 + m.end()
    return "".join(out)


@dataclass(frozen=True)
class Source:
    """A text being parsed and its name, for positions and error messages."""

    text: str
    name: str
    line_starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        object.__setattr__(self, "line_starts", starts)

    def where(self, offset: int) -> tuple[int, int]:
        """(line, column), both from 1, of a character offset."""
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def error_at(self, line: int, col: int, message: str) -> ParseError:
        text = self.text
        start = self.line_starts[line - 1] if line <= len(self.line_starts) else len(text)
        end = text.find("\n", start)
        shown = text[start : len(text) if end < 0 else end]
        caret = col - 1
        if len(shown) > _SHOWN_LINE:  # a window around the column, so the message stays short
            lo = max(0, min(caret - _SHOWN_LINE // 2, len(shown) - _SHOWN_LINE))
            shown, caret = shown[lo : lo + _SHOWN_LINE], caret - lo
        where = f"{shorten(self.name, 200)}:{line}:{col}"
        return ParseError(f"{where}: {shorten(message, 1000)}\n  {shown}\n  {' ' * caret}^")


def lex(src: Source) -> tuple[list[Token], dict[int, str]]:
    """The tokens of ``src`` (ending with an ``eof`` token) and its comments by line."""
    text = src.text
    tokens: list[Token] = []
    comments: dict[int, str] = {}
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        line, col = src.where(pos)
        if m is None:
            found = text[pos]
            hint = "unterminated string" if found == '"' else f"unexpected character {found!r}"
            raise src.error_at(line, col, hint)
        kind, raw = m.lastgroup or "", m.group()
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "comment":
            comments[line] = raw
            continue
        if kind in ("number", "hex") and len(raw) > MAX_NUMBER_CHARS:
            raise src.error_at(
                line,
                col,
                f"a number of {len(raw)} characters is too long (the limit is {MAX_NUMBER_CHARS})",
            )
        value = raw
        try:
            if kind in ("value", "symbol"):
                value = _unescape(raw[2:-1]) if raw[1] == '"' else raw[1:]
            elif kind == "string":
                value = _unescape(raw[1:-1])
        except ValueError as exc:
            raise src.error_at(line, col, str(exc)) from None
        tokens.append(Token(kind, value, line, col))
    line, col = src.where(len(text))
    tokens.append(Token("eof", "", line, col))
    return tokens, comments


class TokenCursor:
    """A position in the tokens of a source, with the helpers a recursive-descent parser uses."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.tokens, self.comments = lex(src)
        self.pos = 0

    def error_at(self, line: int, col: int, message: str) -> ParseError:
        return self.src.error_at(line, col, message)

    def error(self, tok: Token, message: str) -> ParseError:
        return self.error_at(tok.line, tok.col, message)

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def at(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        return tok.kind == kind and (text is None or tok.text == text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        if self.at(kind, text):
            self.pos += 1
            return self.tokens[self.pos - 1]
        return None

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        tok = self.accept(kind, text)
        if tok is None:
            want = what or (repr(text) if text is not None else kind)
            raise self.error(self.peek(), f"expected {want}, got {self.peek().show()}")
        return tok

    def punct(self, ch: str) -> Token:
        return self.expect("punct", ch)
