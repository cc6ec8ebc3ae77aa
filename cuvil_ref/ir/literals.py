"""Literals of the textual IR: tensor types, quantization, numbers, attributes, constant data.

:class:`LiteralParser` reads the pieces the printer writes inside a node or constant -- a type
such as ``i8[4]q<0.5:3>@NHWC``, an attribute dict, a ``dense<...>`` payload or a
``dense_resource<name>`` checked against its sha256 -- over a :class:`~cuvil_ref.ir.lexer.
TokenCursor`. Nested attribute values are bounded by :data:`~cuvil_ref.ir.printer.MAX_NESTING`.
The module structure is :mod:`cuvil_ref.ir.parser`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import shorten
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.lexer import Source, Token, TokenCursor
from cuvil_ref.ir.printer import MAX_NESTING, array_sha256, decode_elements, float_from_bits
from cuvil_ref.ir.types import QuantParams, TensorType

#: Zero points and axes lie in [-2**63, 2**64): int64 and uint64 values.
_INT_RANGE = (-(2**63), 2**64)
#: Dimensions lie in [0, 2**63).
_MAX_DIM = 2**63 - 1


class LiteralParser(TokenCursor):
    """Types, numbers, attributes and constant payloads; ``resources`` backs dense_resource."""

    def __init__(self, src: Source, resources: Mapping[str, Any]) -> None:
        super().__init__(src)
        self.resources = resources
        self.depth = 0

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
