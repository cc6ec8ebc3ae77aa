"""Reads the textual IR written by :mod:`cuvil_ref.ir.printer` back into a :class:`Module`.

A recursive-descent parser over the tokens of :mod:`cuvil_ref.ir.lexer`; the grammar (EBNF) is
in ``docs/ir.md``. A control-flow node's regions open a scope each: a name defined in a region is
visible only there, and a region that names a value of an enclosing graph is refused (regions
read outer values only through their op's operands). Every error is a :class:`ParseError` saying
``<source>:line:column``, what was expected and what was found, with the offending line and a
caret. Constants printed as ``dense_resource<name>`` are taken from ``constants={name: array}``
and checked against the sha256 recorded in the text. The parsed module is then verified; a
verifier error is reported with the line of the failing node.

Hostile text is refused, not obeyed: values and regions nest at most :data:`MAX_NESTING` levels,
a number is at most :data:`MAX_NUMBER_CHARS` characters, zero points and axes fit in 64 bits, and
error messages quote at most a window of the offending line, so every malformed input ends in a
bounded ``ParseError``. The printer refuses to write what the parser would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import UnknownOpError, VerificationError
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.graph import Graph, Module, Node, Provenance, Value, constant_type
from cuvil_ref.ir.lexer import Source, Token
from cuvil_ref.ir.literals import LiteralParser
from cuvil_ref.ir.printer import (
    MAX_REGION_DEPTH,
)
from cuvil_ref.ir.types import TensorType


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


class _Parser(LiteralParser):
    """The module structure: constants, signature, nodes and regions with their scopes."""

    def __init__(self, text: str, source: str, resources: Mapping[str, Any]) -> None:
        super().__init__(Source(text, source), resources)
        self.source = source
        self.defined: dict[str, tuple[Value, int]] = {}  # the innermost scope
        self.outer: list[dict[str, tuple[Value, int]]] = []  # enclosing scopes, outermost first
        self.node_lines: list[tuple[Node, int]] = []

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
