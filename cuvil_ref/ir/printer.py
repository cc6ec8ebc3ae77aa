"""The textual form of the Cuvil IR: ``print_module`` writes it, ``cuvil_ref.ir.parser`` reads it.

The text is exact: ``parse_module(print_module(m))`` gives back ``m`` bit for bit (attribute floats
incl. NaN payloads and -0.0, constants of every dtype, types with layout and quantization tags,
provenance and metadata). The grammar is in ``docs/ir.md``; an example::

    module @mlp attributes {producer = "cuvil-ref 0.1.0"} {
      const %fc1.weight : f32[128,784] = dense_resource<fc1.weight>  // sha256:9f86d08...
      const %half : f32[] = dense<0.5>
      func @main(%x : f32[batch,784]) -> (f32[batch,128]) {
        %fc1 : f32[batch,128] = matmul(%x, %fc1.weight) loc("model.py:12", module="fc1")
        return %fc1
      }
    }

A control-flow node is followed by its regions, each written like a function (its own parameters,
constants, nodes and return) and named after the op's region names::

    %y : f32[2] = if(%p, %x)
      region @then(%a : f32[2]) -> (f32[2]) {
        %r : f32[2] = relu(%a)
        return %r
      }
      region @else(%b : f32[2]) -> (f32[2]) {
        return %b
      }

Constants with at most ``inline_limit`` elements are written inline (shortest exact decimal per
element, or the raw bytes in hex when decimals cannot be exact, e.g. NaN payloads). Larger ones are
written by reference with the sha256 of their bytes; the parser takes them as ``constants=``
(keyed as :func:`resource_table` keys them).
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import IRError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Module, Node, Provenance, Value
from cuvil_ref.ir.types import QuantParams, TensorType

#: Constants with at most this many elements are printed inline.
INLINE_LIMIT = 16
#: Deepest nesting of tuples and dicts in attribute values (the parser refuses deeper text).
MAX_NESTING = 32
#: Deepest nesting of regions (an ``if`` in a ``while`` body is depth 2).
MAX_REGION_DEPTH = 32
#: Longest number literal the parser reads; integers are printed with at most this many digits.
MAX_NUMBER_CHARS = 64

_BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*\Z")
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_CANONICAL_NAN_BITS = 0x7FF8000000000000
_INDENT = "  "


def print_module(module: Module, *, inline_limit: int = INLINE_LIMIT) -> str:
    """The textual IR of ``module`` (ends with a newline)."""
    head = f"module @{format_name(module.name)}"
    if module.metadata:
        head += f" attributes {format_attr_dict(module.metadata)}"
    body = _Printer(module.graph, inline_limit).graph_lines(module.graph)
    return "\n".join([head + " {", *(_INDENT + line for line in body), "}"]) + "\n"


def print_graph(graph: Graph, *, inline_limit: int = INLINE_LIMIT) -> str:
    """The constants and ``func @main`` of ``graph``, without the module wrapper."""
    return "\n".join(_Printer(graph, inline_limit).graph_lines(graph)) + "\n"


def resource_table(graph: Graph | Module) -> dict[str, np.ndarray]:
    """Resource key -> array of every constant of ``graph`` and its regions, as the printer
    writes them by reference (``dense_resource<key>``). A key is the constant's name; a region
    constant whose name is taken by different bytes elsewhere gets ``name#2``, ``name#3``...
    (artifacts store exactly this table)."""
    g = graph.graph if isinstance(graph, Module) else graph
    return dict(_resource_keys(g)[1])


def _resource_keys(graph: Graph) -> tuple[dict[tuple[int, str], str], dict[str, np.ndarray]]:
    """((id of a graph, constant name) -> key, key -> array), in printing order."""
    keys: dict[tuple[int, str], str] = {}
    table: dict[str, np.ndarray] = {}

    def visit(g: Graph) -> None:
        for name, array in g.constants.items():
            if (id(g), name) in keys:
                continue
            key, k = name, 1
            while key in table and not _same_bytes(table[key], array):
                k += 1
                key = f"{name}#{k}"
            table.setdefault(key, array)
            keys[(id(g), name)] = key
        for node in g.nodes:
            for region in node.regions:
                visit(region)

    visit(graph)
    return keys, table


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class _Printer:
    """Prints a graph with its regions; knows every constant's resource key."""

    def __init__(self, root: Graph, inline_limit: int) -> None:
        self.inline_limit = inline_limit
        self.keys = _resource_keys(root)[0]
        self.depth = 0

    def constant_lines(self, graph: Graph) -> list[str]:
        return [
            format_constant(name, array, self.inline_limit, self.keys[(id(graph), name)])
            for name, array in graph.constants.items()
        ]

    def graph_lines(self, graph: Graph) -> list[str]:
        lines = self.constant_lines(graph)
        lines.append(f"func @main{_signature(graph)} {{")
        lines.extend(_INDENT + line for line in self.body_lines(graph))
        lines.append("}")
        return lines

    def body_lines(self, graph: Graph) -> list[str]:
        """The nodes (each with its regions) and the return."""
        lines: list[str] = []
        for node in graph.nodes:
            lines.extend(self.node_lines(node))
        ret = ", ".join(format_value(v) for v in graph.outputs)
        lines.append("return " + ret if ret else "return")
        return lines

    def node_lines(self, node: Node) -> list[str]:
        """``format_node`` and, for a control-flow op, its regions indented below it."""
        lines = [format_node(node)]
        if not node.regions:
            return lines
        from cuvil_ref.ops import get_op

        names = get_op(node.op).regions
        if len(names) != len(node.regions):
            raise IRError(
                f"{node.describe()} holds {len(node.regions)} regions but op '{node.op}' has "
                f"{len(names)}; it has no textual form"
            )
        if self.depth >= MAX_REGION_DEPTH:
            raise IRError(
                f"{node.describe()}: regions nest more than {MAX_REGION_DEPTH} levels deep; "
                "the text form (and the parser) stop there"
            )
        self.depth += 1
        for name, region in zip(names, node.regions, strict=True):
            lines.append(f"{_INDENT}region @{format_name(name)}{_signature(region)} {{")
            inner = [*self.constant_lines(region), *self.body_lines(region)]
            lines.extend(2 * _INDENT + line for line in inner)
            lines.append(_INDENT + "}")
        self.depth -= 1
        return lines


def _signature(graph: Graph) -> str:
    """``(%x : f32[2], ...) -> (f32[2], ...)``."""
    params = ", ".join(f"{format_value(v)} : {format_type(v.type)}" for v in graph.inputs)
    results = ", ".join(format_type(v.type) for v in graph.outputs)
    return f"({params}) -> ({results})"


def format_node(node: Node) -> str:
    """``%y : f32[2] = op(%x) {attrs} loc(...)`` (attrs and loc only when present; a
    control-flow op's regions follow on the next lines)."""
    call = f"{format_name(node.op, kind='op')}({', '.join(format_value(v) for v in node.inputs)})"
    if node.attrs:
        call += " " + format_attr_dict(node.attrs)
    if node.provenance is not None:
        call += " " + format_provenance(node.provenance)
    if not node.outputs:
        return call
    names = ", ".join(format_value(v) for v in node.outputs)
    types = ", ".join(format_type(v.type) for v in node.outputs)
    return f"{names} : {types} = {call}"


def format_value(value: Value) -> str:
    return "%" + format_name(value.name)


def format_name(name: str, kind: str = "value") -> str:
    """A name as written after ``%``/``@`` (or an op name): bare when simple, else quoted."""
    pattern = _BARE_KEY if kind == "op" else _BARE_NAME
    return name if pattern.match(name) else format_string(name)


def format_type(t: TensorType) -> str:
    """``f32[batch,3]``, ``i8[4]q<0.5:3>``, ``f32[1,8,8,3]@NHWC``: dtype, shape, quant, layout.

    The quantization tag comes before the layout so that a layout name never runs into it.
    """
    text = f"{t.dtype.value}[{','.join(str(d) for d in t.shape)}]"
    if t.quant is not None:
        text += format_quant(t.quant)
    if t.layout is not None:
        text += "@" + format_name(t.layout)
    return text


def format_quant(q: QuantParams) -> str:
    """``q<scale:zero_point>`` per tensor, ``q<axis=A;s0,s1:z0,z1>`` per channel."""
    scales = ",".join(format_float(float(s)) for s in q.scale)
    zps = ",".join(str(int(z)) for z in q.zero_point)
    prefix = "" if q.axis is None else f"axis={q.axis};"
    return f"q<{prefix}{scales}:{zps}>"


def format_provenance(p: Provenance) -> str:
    parts = [] if p.source is None else [format_string(p.source)]
    if p.module_path is not None:
        parts.append(f"module={format_string(p.module_path)}")
    if p.torch_node is not None:
        parts.append(f"node={format_string(p.torch_node)}")
    return f"loc({', '.join(parts)})"


# --- attribute values ---------------------------------------------------------------------------


def format_attr_dict(attrs: Mapping[str, Any], depth: int = 0) -> str:
    """``{axis = 1, sizes = (64, 64)}``; keys in insertion order (``depth``: enclosing values)."""
    items = ", ".join(
        f"{format_key(k)} = {format_attr_value(v, k, depth)}" for k, v in attrs.items()
    )
    return "{" + items + "}"


def format_key(key: str) -> str:
    if not isinstance(key, str):
        raise IRError(f"attribute/metadata key {key!r} must be a string")
    return key if _BARE_KEY.match(key) else format_string(key)


def format_attr_value(value: Any, key: str = "?", depth: int = 0) -> str:
    """An attribute or metadata value: int, float, bool, str, None, tuple or dict of those."""
    if depth >= MAX_NESTING and isinstance(value, (tuple, list, Mapping)):
        raise IRError(f"attribute/metadata '{key}' nests more than {MAX_NESTING} levels deep")
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        text = str(int(value))
        if len(text) > MAX_NUMBER_CHARS:
            raise IRError(
                f"attribute/metadata '{key}': an integer of {len(text)} digits has no textual "
                f"form (at most {MAX_NUMBER_CHARS} characters)"
            )
        return text
    if isinstance(value, (float, np.floating)):
        return format_float(float(value))
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, DType):
        return format_string(value.value)
    if isinstance(value, (tuple, list)):
        items = [format_attr_value(v, key, depth + 1) for v in value]
        return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if isinstance(value, Mapping):
        return format_attr_dict(value, depth + 1)
    raise IRError(
        f"attribute/metadata '{key}' = {value!r}: a {type(value).__name__} has no textual form; "
        "use ints, floats, bools, strings, None, tuples or dicts"
    )


def format_float(x: float) -> str:
    """Exact: ``repr`` (shortest round-trip, ``-0.0``, ``inf``), ``nan`` or ``nan(0x<bits>)``."""
    if math.isnan(x):
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        return "nan" if bits == _CANONICAL_NAN_BITS else f"nan(0x{bits:016x})"
    return repr(x)


def float_from_bits(bits: int) -> float:
    """The double whose IEEE bits are ``bits`` (used for ``nan(0x...)``)."""
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_string(s: str) -> str:
    """A double-quoted string; control characters and lone surrogates as ``\\u{HEX}``."""
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# --- constants ----------------------------------------------------------------------------------


def format_constant(
    name: str, array: np.ndarray, inline_limit: int = INLINE_LIMIT, key: str | None = None
) -> str:
    """``const %name : type = dense<...>`` or ``= dense_resource<key>  // sha256:<hex>`` (the
    key defaults to the name)."""
    arr = np.asarray(array)
    head = f"const %{format_name(name)} : {format_type(_array_type(name, arr))} = "
    if arr.size <= inline_limit:
        return head + f"dense<{format_dense(arr)}>"
    ref = format_key(name if key is None else key)
    return head + f"dense_resource<{ref}>  // sha256:{array_sha256(arr)}"


def array_sha256(array: np.ndarray) -> str:
    """sha256 of the array's bytes in C order (little-endian, as stored)."""
    return hashlib.sha256(np.require(array, requirements="C").tobytes()).hexdigest()


def format_dense(arr: np.ndarray) -> str:
    """The body of ``dense<...>``: a scalar, a flat row-major list, or ``0x`` + raw bytes."""
    dtype = DType.from_numpy(arr.dtype)
    texts = [format_element(x, dtype) for x in arr.reshape(-1)]
    raw = np.require(arr, requirements="C").tobytes()
    exact = None not in texts and decode_elements(texts, dtype).tobytes() == raw  # type: ignore[arg-type]
    if not exact:
        return "0x" + raw.hex()
    return str(texts[0]) if arr.ndim == 0 else "[" + ", ".join(map(str, texts)) + "]"


def format_element(x: Any, dtype: DType) -> str | None:
    """One constant element; None when no decimal form is exact (a non-canonical NaN)."""
    if dtype is DType.bool:
        return "true" if x else "false"
    if dtype.is_int:
        return str(int(x))
    if np.isnan(x):
        canonical = np.array(np.nan, dtype=dtype.numpy).tobytes()
        return "nan" if np.array(x, dtype=dtype.numpy).tobytes() == canonical else None
    # numpy prints the shortest decimal that round-trips for f16/f32; bf16 goes through f32.
    shown = np.float32(x) if dtype is DType.bf16 else x
    return str(shown)


def decode_elements(texts: list[str], dtype: DType) -> np.ndarray:
    """Inverse of :func:`format_element` for a flat list (the parser uses it too)."""
    if dtype is DType.bool:
        return np.array([t == "true" for t in texts], dtype=np.bool_)
    if dtype.is_int:
        return np.array([int(t) for t in texts], dtype=dtype.numpy)
    with np.errstate(over="ignore"):
        return np.array([float(t) for t in texts], dtype=np.float64).astype(dtype.numpy)


def _array_type(name: str, arr: np.ndarray) -> TensorType:
    try:
        return TensorType(tuple(int(d) for d in arr.shape), DType.from_numpy(arr.dtype))
    except ValueError as exc:
        raise IRError(f"constant %{name}: {exc}") from exc
