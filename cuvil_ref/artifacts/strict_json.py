"""Strict JSON for artifact members: bounded nesting, finite numbers, bounded integers, typed
fields.

Python's ``json`` accepts things an artifact never holds and that break the code reading it:
``NaN``/``Infinity`` and ``1e400`` (an infinite float where an integer belongs), integers of
thousands of digits, and nesting deep enough to exhaust the interpreter's recursion limit. Every
JSON member of a ``.cuvilir`` is read through :func:`load_json`, which refuses all of them with an
:class:`~cuvil_ref.errors.ArtifactFormatError`; :func:`field` then reads one field with its
expected type, so a wrong JSON type is refused by name instead of failing deep in the loader.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast

import numpy as np

from cuvil_ref.errors import ArtifactFormatError, shorten

#: Deepest nesting of arrays/objects an artifact member may have (the schema needs 4).
MAX_DEPTH = 32
#: Largest integer accepted anywhere (offsets, sizes, dims): 2**63 - 1.
MAX_INT = 2**63 - 1
_MAX_INT_DIGITS = len(str(MAX_INT)) + 1

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


def _depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (linear time, no recursion)."""
    bare = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    step = np.isin(bare, _OPEN).astype(np.int64) - np.isin(bare, _CLOSE).astype(np.int64)
    return int(np.cumsum(step).max(initial=0))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (numbers must be finite)")


def _parse_int(text: str) -> int:
    if len(text) > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits is out of range")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {shorten(text, 40)} is out of range")
    return value


def load_json(data: bytes, where: str) -> Any:
    """Parse ``data`` strictly; every problem is an ArtifactFormatError naming ``where``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactFormatError(f"{where} is not UTF-8 text: {exc.reason}") from None
    depth = _depth(data)
    if depth > MAX_DEPTH:
        raise ArtifactFormatError(
            f"{where} nests {depth} levels deep; an artifact member nests at most {MAX_DEPTH}"
        )
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except RecursionError:  # pragma: no cover - _depth refuses deep input first
        raise ArtifactFormatError(f"{where} nests too deeply") from None
    except ValueError as exc:
        raise ArtifactFormatError(f"{where} is not valid JSON: {shorten(str(exc), 200)}") from None


_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "object": (dict,),
    "list": (list,),
    "number": (int, float),
}


def field(obj: Any, key: str, kind: str, where: str, *, minimum: int | None = 0) -> Any:
    """``obj[key]``, which must exist and be of ``kind`` (``int``, ``str``, ``object``, ``list``,
    ``number``); an ``int`` also lies in ``[minimum, MAX_INT]``. Booleans are never numbers."""
    if not isinstance(obj, dict):
        raise ArtifactFormatError(f"{where} must be a JSON object, got {_json_type(obj)}")
    if key not in obj:
        raise ArtifactFormatError(f"{where} lacks the field {key!r}")
    return check(obj[key], kind, f"{where}: field {key!r}", minimum=minimum)


def check(value: Any, kind: str, what: str, *, minimum: int | None = 0) -> Any:
    """``value`` itself checked as :func:`field` checks a field."""
    if isinstance(value, bool) or not isinstance(value, _KINDS[kind]):
        raise ArtifactFormatError(f"{what} must be a JSON {kind}, got {_json_type(value)}")
    if kind == "int" and not _in_range(cast(int, value), minimum):
        low = "" if minimum is None else f"{minimum} "
        raise ArtifactFormatError(f"{what} is {shorten(str(value), 40)}, outside [{low}.. 2**63)")
    return value


def _in_range(value: int, minimum: int | None) -> bool:
    return -MAX_INT <= value <= MAX_INT and (minimum is None or value >= minimum)


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}
    names[dict] = "object"
    names[type(None)] = "null"
    return names.get(type(value), type(value).__name__)
