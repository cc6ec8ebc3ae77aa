"""Reads the textual IR written by :mod:`cuvil_ref.ir.printer` back into a :class:`Module`.

A hand-written lexer and recursive-descent parser; the grammar (EBNF) is in ``docs/ir.md``. A
control-flow node's regions open a scope each: a name defined in a region is visible only there,
and a region that names a value of an enclosing graph is refused (regions read outer values only
through their op's operands). Every
error is a :class:`ParseError` saying ``<source>:line:column``, what was expected and what was
found, with the offending line and a caret. Constants printed as ``dense_resource<name>`` are taken
from ``constants={name: array}`` and checked against the sha256 recorded in the text. The parsed
module is then verified; a verifier error is reported with the line of the failing node.

Hostile text is refused, not obeyed: values and regions nest at most :data:`MAX_NESTING` levels,
a number is
at most :data:`MAX_NUMBER_CHARS` characters, zero points and axes fit in 64 bits, and error
messages quote at most a window of the offending line, so every malformed input ends in a bounded
``ParseError``. The printer refuses to write what the parser would refuse.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import ParseError, UnknownOpError, VerificationError, shorten
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Graph, Module, Node, Provenance, Value, constant_type
from cuvil_ref.ir.printer import (
    MAX_NESTING,
    MAX_NUMBER_CHARS,
    MAX_REGION_DEPTH,
    array_sha256,
    decode_elements,
    float_from_bits,
)
from cuvil_ref.ir.types import QuantParams, TensorType


def parse_module(
    text: str,
    constants: Mapping[str, Any] | None = None,
    *,
    source: str = "<text>",
    verify: bool = True,
) -> Module:
    """Parse ``module @name [attributes {...}] { const... func @main(...) {...} }``."""
    parser = _Parser(text, source, constants or {})
    module = parser.module()
    if verify:
        parser.verify(module.graph)
    return module


def parse_graph(
    text: str, constants: Mapping[str, Any] | None = None, *, source: str = "<text>"
) -> Graph:
    """Parse the output of ``print_graph``: constants and ``func @main`` without the module."""
    parser = _Parser(text, source, constants or {})
    graph = parser.graph_body(end="eof")
    parser.verify(graph)
    return graph


def parse_type(text: str) -> TensorType:
    """Parse one tensor type such as ``f32[batch,3]`` or ``i8[4]q<0.5:3>@NHWC``."""
    parser = _Parser(text, "<type>", {})
    t = parser.type()
    parser.expect("eof")
    return t


#: Zero points and axes lie in [-2**63, 2**64): int64 and uint64 values.
_INT_RANGE = (-(2**63), 2**64)
#: Dimensions lie in [0, 2**63).
_MAX_DIM = 2**63 - 1
_SHOWN_LINE = 120

# --- lexer --------------------------------------------------------------------------------------

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


class _Parser:
    def __init__(self, text: str, source: str, resources: Mapping[str, Any]) -> None:
        self.text, self.source, self.resources = text, source, resources
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.comments: dict[int, str] = {}
        self.tokens = self._lex()
        self.pos = 0
        self.defined: dict[str, tuple[Value, int]] = {}  # the innermost scope
        self.outer: list[dict[str, tuple[Value, int]]] = []  # enclosing scopes, outermost first
        self.node_lines: list[tuple[Node, int]] = []
        self.depth = 0

    # errors and positions

    def _where(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def error_at(self, line: int, col: int, message: str) -> ParseError:
        start = self.line_starts[line - 1] if line <= len(self.line_starts) else len(self.text)
        end = self.text.find("\n", start)
        shown = self.text[start : len(self.text) if end < 0 else end]
        caret = col - 1
        if len(shown) > _SHOWN_LINE:  # a window around the column, so the message stays short
            lo = max(0, min(caret - _SHOWN_LINE // 2, len(shown) - _SHOWN_LINE))
            shown, caret = shown[lo : lo + _SHOWN_LINE], caret - lo
        where = f"{shorten(self.source, 200)}:{line}:{col}"
        return ParseError(f"{where}: {shorten(message, 1000)}\n  {shown}\n  {' ' * caret}^")

    def error(self, tok: Token, message: str) -> ParseError:
        return self.error_at(tok.line, tok.col, message)

    def _lex(self) -> list[Token]:
        tokens, pos = [], 0
        while pos < len(self.text):
            m = _TOKEN.match(self.text, pos)
            line, col = self._where(pos)
            if m is None:
                found = self.text[pos]
                hint = "unterminated string" if found == '"' else f"unexpected character {found!r}"
                raise self.error_at(line, col, hint)
            kind, raw = m.lastgroup or "", m.group()
            pos = m.end()
            if kind == "ws":
                continue
            if kind == "comment":
                self.comments[line] = raw
                continue
            if kind in ("number", "hex") and len(raw) > MAX_NUMBER_CHARS:
                raise self.error_at(
                    line,
                    col,
                    f"a number of {len(raw)} characters is too long (the limit is "
                    f"{MAX_NUMBER_CHARS})",
                )
            text = raw
            try:
                if kind in ("value", "symbol"):
                    text = _unescape(raw[2:-1]) if raw[1] == '"' else raw[1:]
                elif kind == "string":
                    text = _unescape(raw[1:-1])
            except ValueError as exc:
                raise self.error_at(line, col, str(exc)) from None
            tokens.append(Token(kind, text, line, col))
        line, col = self._where(len(self.text))
        tokens.append(Token("eof", "", line, col))
        return tokens

    # token helpers

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

    # module structure

    def module(self) -> Module:
        self.expect("ident", "module", "'module'")
        name = self.expect("symbol", what="the module name (@name)").text
        metadata = FrozenDict()
        if self.accept("ident", "attributes"):
            metadata = self.attr_dict()
        self.punct("{")
        graph = self.graph_body(end="}")
        self.punct("}")
        self.expect("eof", what="end of input after the module")
        return Module(graph, name, metadata)

    def graph_body(self, end: str) -> Graph:
        constants = self.constants()
        self.expect("ident", "func", "'const' or 'func'")
        fname = self.expect("symbol", what="@main")
        if fname.text != "main":
            raise self.error(
                fname, f"expected @main (a module holds one function), got @{fname.text}"
            )
        inputs, result_types = self.signature()
        self.punct("{")
        nodes, outputs = self.block(result_types)
        if end == "eof":
            self.expect("eof", what="end of input after the function")
        return Graph(tuple(inputs), tuple(nodes), tuple(outputs), constants)

    def constants(self) -> dict[str, np.ndarray]:
        constants: dict[str, np.ndarray] = {}
        while self.at("ident", "const"):
            name, array = self.constant()
            constants[name] = array
        return constants

    def signature(self) -> tuple[list[Value], list[TensorType]]:
        """``(%x : type, ...) -> (type, ...)``: the parameters (defined here) and result types."""
        self.punct("(")
        inputs: list[Value] = []
        while not self.at("punct", ")"):
            if inputs:
                self.punct(",")
            tok = self.expect("value", what="a parameter (%name : type)")
            self.punct(":")
            inputs.append(self.define(tok, self.type()))
        self.punct(")")
        self.expect("arrow", what="'->'")
        return inputs, self.paren_list(self.type)

    def block(self, result_types: list[TensorType]) -> tuple[list[Node], list[Value]]:
        """Nodes up to ``return ...`` and the closing brace; the returned values must have the
        signature's result types."""
        nodes: list[Node] = []
        while not self.at("ident", "return"):
            nodes.append(self.node())
        ret = self.expect("ident", "return")
        outputs: list[Value] = []
        if not self.at("punct", "}"):
            outputs.append(self.use(self.expect("value", what="a returned value")))
            while self.accept("punct", ","):
                outputs.append(self.use(self.expect("value", what="a returned value")))
        if len(outputs) != len(result_types):
            raise self.error(
                ret, f"returns {len(outputs)} values but the signature declares {len(result_types)}"
            )
        for v, t in zip(outputs, result_types, strict=True):
            if v.type != t:
                raise self.error(
                    ret, f"returned %{v.name} has type {v.type} but the signature declares {t}"
                )
        self.punct("}")
        return nodes, outputs

    def region(self) -> tuple[Token, Graph]:
        """``region @name(params) -> (types) { const... node... return ... }`` in a new scope."""
        start = self.expect("ident", "region")
        if len(self.outer) >= MAX_REGION_DEPTH:
            raise self.error(start, f"regions nest more than {MAX_REGION_DEPTH} levels deep")
        name = self.expect("symbol", what="the region's name (@then, @body...)")
        self.outer.append(self.defined)
        self.defined = {}
        try:
            inputs, result_types = self.signature()
            self.punct("{")
            constants = self.constants()
            nodes, outputs = self.block(result_types)
        finally:
            self.defined = self.outer.pop()
        return name, Graph(tuple(inputs), tuple(nodes), tuple(outputs), constants)

    def define(self, tok: Token, t: TensorType) -> Value:
        if tok.text in self.defined:
            first = self.defined[tok.text][1]
            raise self.error(tok, f"%{tok.text} is defined twice (first on line {first})")
        value = Value(tok.text, t)
        self.defined[tok.text] = (value, tok.line)
        return value

    def use(self, tok: Token) -> Value:
        if tok.text not in self.defined:
            if any(tok.text in scope for scope in self.outer):
                raise self.error(
                    tok,
                    f"%{tok.text} is defined outside this region; a region reads outer values "
                    "only through its op's operands (pass it as an operand)",
                )
            raise self.error(
                tok,
                f"%{tok.text} is used before it is defined "
                "(not a parameter, constant or earlier result)",
            )
        return self.defined[tok.text][0]

    def paren_list(self, item: Any) -> list[Any]:
        self.punct("(")
        items: list[Any] = []
        while not self.at("punct", ")"):
            if items:
                self.punct(",")
            items.append(item())
        self.punct(")")
        return items

    def node(self) -> Node:
        start = self.peek()
        outs: list[Token] = []
        types: list[TensorType] = []
        if self.at("value"):
            outs.append(self.expect("value"))
            while self.accept("punct", ","):
                outs.append(self.expect("value", what="another result name"))
            self.punct(":")
            types.append(self.type())
            while self.accept("punct", ","):
                types.append(self.type())
            if len(types) != len(outs):
                raise self.error(start, f"{len(outs)} results but {len(types)} types")
            self.punct("=")
        op_tok = self.peek()
        if op_tok.kind not in ("ident", "string") or op_tok.text == "return":
            raise self.error(
                op_tok, f"expected a node (%y : type = op(...)) or 'return', got {op_tok.show()}"
            )
        self.pos += 1
        self.check_op(op_tok)
        inputs = self.paren_list(lambda: self.use(self.expect("value", what="an operand %name")))
        attrs = self.attr_dict() if self.at("punct", "{") else FrozenDict()
        prov = self.loc() if self.at("ident", "loc") else None
        regions = self.regions(op_tok)
        outputs = tuple(self.define(tok, t) for tok, t in zip(outs, types, strict=True))
        node = Node(op_tok.text, tuple(inputs), outputs, attrs, prov, regions)
        self.node_lines.append((node, start.line))
        return node

    def regions(self, op_tok: Token) -> tuple[Graph, ...]:
        """The regions after a node, named as its op declares them."""
        from cuvil_ref.ops import get_op

        found: list[tuple[Token, Graph]] = []
        while self.at("ident", "region") and self.peek(1).kind == "symbol":
            found.append(self.region())
        expected = get_op(op_tok.text).regions
        names = tuple(tok.text for tok, _ in found)
        if names != expected:
            want = " ".join(f"region @{n}" for n in expected) or "no regions"
            got = " ".join(f"region @{n}" for n in names) or "none"
            where = found[len(expected)][0] if len(found) > len(expected) else op_tok
            for (tok, _), want_name in zip(found, expected):
                if tok.text != want_name:
                    where = tok
                    break
            raise self.error(where, f"op '{op_tok.text}' takes {want} (in this order), got {got}")
        return tuple(g for _, g in found)

    def check_op(self, tok: Token) -> None:
        from cuvil_ref.ops import get_op

        try:
            get_op(tok.text)
        except UnknownOpError as exc:
            raise self.error(tok, str(exc)) from None

    def loc(self) -> Provenance:
        self.expect("ident", "loc")
        self.punct("(")
        fields: dict[str, str] = {}
        keys = {"module": "module_path", "node": "torch_node", "source": "source"}
        if self.at("string"):
            fields["source"] = self.expect("string").text
        while not self.at("punct", ")"):
            if fields:
                self.punct(",")
            key = self.expect("ident", what="module=, node= or source=")
            if key.text not in keys or keys[key.text] in fields:
                raise self.error(
                    key, f"expected module=, node= or source= (once each), got {key.show()}"
                )
            self.punct("=")
            fields[keys[key.text]] = self.expect("string", what="a quoted string").text
        self.punct(")")
        return Provenance(**fields)

    # types

    def type(self) -> TensorType:
        tok = self.expect("ident", what="a type such as f32[2,3]")
        try:
            dtype = DType.parse(tok.text)
        except ValueError as exc:
            raise self.error(tok, str(exc)) from None
        self.punct("[")
        shape: list[int | str] = []
        while not self.at("punct", "]"):
            if shape:
                self.punct(",")
            dim = self.peek()
            if dim.kind == "number" and dim.text.isdigit():
                if int(dim.text) > _MAX_DIM:
                    raise self.error(dim, f"dimension {dim.text} is out of range (< 2**63)")
                shape.append(int(dim.text))
            elif dim.kind == "ident":
                shape.append(dim.text)
            else:
                raise self.error(
                    dim, f"expected a dimension (a size or a symbol), got {dim.show()}"
                )
            self.pos += 1
        self.punct("]")
        quant, layout = None, None
        while True:
            if quant is None and self.at("ident", "q") and self.peek(1).text == "<":
                quant = self.quant()
            elif layout is None and self.at("symbol"):
                layout = self.expect("symbol").text
            else:
                break
        try:
            return TensorType(tuple(shape), dtype, layout, quant)
        except Exception as exc:  # IRError from TensorType/QuantParams validation
            raise self.error(tok, str(exc)) from None

    def quant(self) -> QuantParams:
        start = self.expect("ident", "q")
        self.punct("<")
        axis = None
        if self.accept("ident", "axis"):
            self.punct("=")
            axis = self.integer()
            self.punct(";")
        scales = [self.float_value()]
        while self.accept("punct", ","):
            scales.append(self.float_value())
        self.punct(":")
        zps = [self.integer()]
        while self.accept("punct", ","):
            zps.append(self.integer())
        self.punct(">")
        try:
            return QuantParams(tuple(scales), tuple(zps), axis)
        except Exception as exc:
            raise self.error(start, str(exc)) from None

    def integer(self) -> int:
        tok = self.expect("number", what="an integer")
        if not re.fullmatch(r"-?\d+", tok.text):
            raise self.error(tok, f"expected an integer, got {tok.show()}")
        return self.int64(tok)

    def int64(self, tok: Token) -> int:
        value = int(tok.text)
        if not _INT_RANGE[0] <= value < _INT_RANGE[1]:
            raise self.error(tok, f"integer {tok.text} does not fit in 64 bits")
        return value

    def float_value(self) -> float:
        value = self.attr_value()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(self.tokens[self.pos - 1], f"expected a number, got {value!r}")
        return float(value)

    # attribute values

    def attr_dict(self) -> FrozenDict:
        self.punct("{")
        items: dict[str, Any] = {}
        while not self.at("punct", "}"):
            if items:
                self.punct(",")
            key = self.peek()
            if key.kind not in ("ident", "string"):
                raise self.error(key, f"expected an attribute name, got {key.show()}")
            self.pos += 1
            if key.text in items:
                raise self.error(key, f"attribute '{key.text}' is given twice")
            self.punct("=")
            items[key.text] = self.attr_value()
        self.punct("}")
        return FrozenDict(items)

    def attr_value(self) -> Any:
        tok = self.peek()
        if tok.kind == "punct" and tok.text in "({":
            if self.depth >= MAX_NESTING:
                raise self.error(tok, f"values nest more than {MAX_NESTING} levels deep")
            self.depth += 1
            try:
                return self.nested_value(tok)
            finally:
                self.depth -= 1
        if tok.kind == "number":
            self.pos += 1
            return float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        if tok.kind == "string":
            self.pos += 1
            return tok.text
        if tok.kind == "punct" and tok.text == "-" and self.peek(1).text in ("inf", "nan"):
            self.pos += 1
            return -self.attr_value()
        if tok.kind == "ident":
            words = {"true": True, "false": False, "none": None, "inf": float("inf")}
            if tok.text in words:
                self.pos += 1
                return words[tok.text]
            if tok.text == "nan":
                self.pos += 1
                if self.accept("punct", "("):
                    bits = self.expect("hex", what="the NaN bits as 0x...")
                    self.punct(")")
                    return float_from_bits(self.nan_bits(bits))
                return float("nan")
        raise self.error(
            tok,
            "expected a value (number, string, true, false, none, (tuple) or "
            f"{{dict}}), got {tok.show()}",
        )

    def nested_value(self, tok: Token) -> Any:
        """A ``(tuple)`` or a ``{dict}`` (the caller bounds the nesting)."""
        if tok.text == "{":
            return self.attr_dict()
        self.pos += 1
        items: list[Any] = []
        while not self.at("punct", ")"):
            items.append(self.attr_value())
            if not self.accept("punct", ","):
                break
        self.punct(")")
        return tuple(items)

    def nan_bits(self, tok: Token) -> int:
        """The 64 IEEE bits of ``nan(0x...)``, which must be a NaN."""
        digits = tok.text[2:]
        bits = int(digits, 16) if digits else -1
        exponent, mantissa = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
        if not (0 <= bits < 2**64 and exponent == 0x7FF and mantissa):
            raise self.error(
                tok,
                f"nan({shorten(tok.text, 30)}) is not a NaN: give the 64 bits of a double "
                "whose exponent is all ones and mantissa non-zero, e.g. nan(0x7ff8000000000001)",
            )
        return bits

    # constants

    def constant(self) -> tuple[str, np.ndarray]:
        self.expect("ident", "const")
        tok = self.expect("value", what="the constant's name (%name)")
        self.punct(":")
        type_tok = self.peek()
        t = self.type()
        if t.layout is not None or t.quant is not None or not t.is_static:
            raise self.error(
                type_tok,
                f"constant %{tok.text} must have a static plain type "
                f"(no symbols, layout or quantization), got {t}",
            )
        self.punct("=")
        if self.accept("ident", "dense"):
            self.punct("<")
            array = self.dense(t, tok.text)
            self.punct(">")
        else:
            self.expect("ident", "dense_resource", "dense<...> or dense_resource<name>")
            self.punct("<")
            ref = self.peek()
            if ref.kind not in ("ident", "string"):
                raise self.error(ref, f"expected a resource name, got {ref.show()}")
            self.pos += 1
            close = self.punct(">")
            array = self.resource(ref, t, self.comments.get(close.line, ""))
        self.define(tok, constant_type(array))
        return tok.text, array

    def dense(self, t: TensorType, name: str) -> np.ndarray:
        start = self.peek()
        if start.kind == "hex":
            self.pos += 1
            raw = bytes.fromhex(start.text[2:]) if len(start.text) % 2 == 0 else b""
            if len(raw) != t.nbytes():
                raise self.error(
                    start,
                    f"constant %{name} of type {t} needs {t.nbytes()} bytes "
                    f"({2 * t.nbytes()} hex digits), got {len(start.text) - 2} digits",
                )
            return np.frombuffer(raw, dtype=t.dtype.numpy).reshape(t.shape).copy()
        if t.rank == 0:
            texts = [self.element(t.dtype)]
        else:
            self.punct("[")
            texts = []
            while not self.at("punct", "]"):
                if texts:
                    self.punct(",")
                texts.append(self.element(t.dtype))
            self.punct("]")
        if len(texts) != t.numel():
            raise self.error(
                start, f"constant %{name} of type {t} needs {t.numel()} values, got {len(texts)}"
            )
        try:
            return decode_elements(texts, t.dtype).reshape(t.shape)
        except (OverflowError, ValueError) as exc:
            raise self.error(start, f"constant %{name}: {exc}") from None

    def element(self, dtype: DType) -> str:
        tok = self.peek()
        if dtype is DType.bool:
            ok = tok.kind == "ident" and tok.text in ("true", "false")
        elif dtype.is_int:
            ok = tok.kind == "number" and re.fullmatch(r"-?\d+", tok.text) is not None
        else:
            if tok.text == "-" and self.peek(1).text in ("inf", "nan"):
                self.pos += 2
                return "-" + self.tokens[self.pos - 1].text
            ok = tok.kind == "number" or (tok.kind == "ident" and tok.text in ("inf", "nan"))
        if not ok:
            raise self.error(tok, f"expected a {dtype.value} element, got {tok.show()}")
        self.pos += 1
        return tok.text

    def resource(self, ref: Token, t: TensorType, comment: str) -> np.ndarray:
        if ref.text not in self.resources:
            raise self.error(
                ref,
                f"constant '{ref.text}' is stored by reference; pass it as "
                f"parse_module(text, constants={{'{ref.text}': array}})",
            )
        array = np.asarray(self.resources[ref.text])
        try:
            got = DType.from_numpy(array.dtype).value
        except ValueError:
            got = str(array.dtype)
        if array.shape != t.shape or got != t.dtype.value:
            raise self.error(
                ref,
                f"constant '{ref.text}' is declared {t} but the given array is "
                f"{got}[{','.join(str(d) for d in array.shape)}]",
            )
        m = re.search(r"sha256:([0-9a-f]{64})", comment)
        if m and array_sha256(array) != m.group(1):
            raise self.error(
                ref,
                f"constant '{ref.text}': the given array's sha256 is "
                f"{array_sha256(array)} but the text records {m.group(1)}; pass the "
                "weights the module was printed with",
            )
        return array

    # verification with positions

    def verify(self, graph: Graph) -> None:
        from cuvil_ref.ir.verifier import verify

        try:
            verify(graph)
        except VerificationError as exc:
            message = str(exc)
            for node, line in self.node_lines:
                if message.startswith(node.describe()):
                    raise VerificationError(f"{self.source}:{line}: {message}") from exc
            raise VerificationError(f"{self.source}: {message}") from exc
