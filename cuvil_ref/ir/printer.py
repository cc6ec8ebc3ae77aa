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

Constants with at most ``inline_limit`` elements are written inline (shortest exact decimal per
element, or the raw bytes in hex when decimals cannot be exact, e.g. NaN payloads). Larger ones are
written by reference with the sha256 of their bytes; the parser takes them as ``constants=``.
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
    body = _graph_lines(module.graph, inline_limit)
    return "\n".join([head + " {", *(_INDENT + line for line in body), "}"]) + "\n"


def print_graph(graph: Graph, *, inline_limit: int = INLINE_LIMIT) -> str:
    """The constants and ``func @main`` of ``graph``, without the module wrapper."""
    return "\n".join(_graph_lines(graph, inline_limit)) + "\n"


def _graph_lines(graph: Graph, inline_limit: int) -> list[str]:
    lines = [format_constant(name, graph.constants[name], inline_limit) for name in graph.constants]
    params = ", ".join(f"{format_value(v)} : {format_type(v.type)}" for v in graph.inputs)
    results = ", ".join(format_type(v.type) for v in graph.outputs)
    lines.append(f"func @main({params}) -> ({results}) {{")
    lines.extend(_INDENT + format_node(n) for n in graph.nodes)
    ret = ", ".join(format_value(v) for v in graph.outputs)
    lines.append(_INDENT + ("return " + ret if ret else "return"))
    lines.append("}")
    return lines


def format_node(node: Node) -> str:
    """``%y : f32[2] = op(%x) {attrs} loc(...)`` (attrs and loc only when present)."""
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


def format_constant(name: str, array: np.ndarray, inline_limit: int = INLINE_LIMIT) -> str:
    """``const %name : type = dense<...>`` or ``= dense_resource<name>  // sha256:<hex>``."""
    arr = np.asarray(array)
    head = f"const %{format_name(name)} : {format_type(_array_type(name, arr))} = "
    if arr.size <= inline_limit:
        return head + f"dense<{format_dense(arr)}>"
    return head + f"dense_resource<{format_key(name)}>  // sha256:{array_sha256(arr)}"


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
