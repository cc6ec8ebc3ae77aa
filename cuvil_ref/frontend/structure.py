"""The model's output structure, recorded as data and rebuilt around the compiled outputs.

A model returns a tensor, or a pytree of tensors: tuples, lists, dicts, namedtuples, torch's
``return_types`` (``torch.sort`` gives ``(values, indices)``), dataclasses and ``transformers``'
``ModelOutput``. ``encode`` walks torch's ``TreeSpec`` and gives a JSON-able tree whose leaves are
output indices::

    {"kind": "record", "type": "transformers.modeling_outputs.BaseModelOutput",
     "keys": ["last_hidden_state", "pooler_output"],
     "items": [{"kind": "tensor", "index": 0}, {"kind": "tensor", "index": 1}]}

It is stored in ``module.metadata["output_structure"]`` and so travels with the ``.cuvilir``
artifact as plain JSON: loading never imports or calls anything it names. ``rebuild`` uses the
real class when it was seen in this process (the model was captured here); otherwise it uses a
stand-in of the same shape: a ``collections.namedtuple`` with the recorded fields, or a
:class:`Record` (a ModelOutput-like mapping with attribute and integer access).
"""

from __future__ import annotations

import ast
import collections
import json
from collections.abc import Callable
from typing import Any

from cuvil_ref.errors import CaptureError, InputError

#: Classes met at capture in this process, by qualified name (used to rebuild the real type).
_LIVE_TYPES: dict[str, type] = {}


class Record(collections.OrderedDict):  # type: ignore[type-arg]
    """A stand-in for a ``ModelOutput``/dataclass whose class is not loaded: ``out.name``,
    ``out["name"]``, ``out[0]`` (the first field) and ``out.to_tuple()`` all work."""

    def __init__(self, type_name: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.__dict__["type_name"] = type_name

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{self.type_name} has no field {name!r}") from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, slice)):
            return self.to_tuple()[key]
        return super().__getitem__(key)

    def to_tuple(self) -> tuple[Any, ...]:
        return tuple(self.values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}=..." for k in self)
        return f"{self.type_name}({inner})"


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _remember(cls: type) -> str:
    name = _qualname(cls)
    _LIVE_TYPES[name] = cls
    return name


def encode(spec: Any, leaves: list[Any], is_tensor: Callable[[Any], bool]) -> dict[str, Any]:
    """A torch ``TreeSpec`` as a JSON-able structure. ``leaves`` are its leaves in flatten order:
    tensors get consecutive output indices; None and plain Python numbers, bools and strings are
    kept as constants."""
    position = [0]
    index = [0]

    def leaf() -> dict[str, Any]:
        value = leaves[position[0]]
        position[0] += 1
        if is_tensor(value):
            index[0] += 1
            return {"kind": "tensor", "index": index[0] - 1}
        if value is None:
            return {"kind": "none"}
        if isinstance(value, (bool, int, float, str)) and not isinstance(value, type):
            return {"kind": "const", "value": value}
        raise CaptureError(
            f"the model returns {type(value).__name__} {str(value)[:60]}; Cuvil graphs return "
            "tensors (in tuples, lists, dicts, namedtuples, dataclasses or ModelOutputs)"
        )

    def walk(s: Any) -> dict[str, Any]:
        if s.is_leaf():
            return leaf()
        items = [walk(c) for c in s.children()]
        t = s.type
        if t is tuple:
            return {"kind": "tuple", "items": items}
        if t is list or _is_fx(t, list):
            return {"kind": "list", "items": items}
        if t in (dict, collections.OrderedDict) or _is_fx(t, dict):
            keys = list(s.context)
            if not all(isinstance(k, (str, int)) for k in keys):
                raise CaptureError(f"output dict keys must be str or int, got {keys!r}")
            return {"kind": "dict", "keys": keys, "items": items}
        if t is type(None):
            return {"kind": "none"}
        if t is collections.namedtuple:  # torch: type is the factory, context the class
            cls = s.context
            return {
                "kind": "namedtuple",
                "type": _remember(cls),
                "keys": list(cls._fields),
                "items": items,
            }
        if isinstance(t, type) and hasattr(t, "n_fields"):  # torch.return_types structseq
            fields = list(getattr(t, "__match_args__", ()))
            if len(fields) != len(items):
                fields = [f"field{i}" for i in range(len(items))]
            return {"kind": "namedtuple", "type": _remember(t), "keys": fields, "items": items}
        context = s.context
        if (  # torch.utils._pytree.register_dataclass: [field names, None-valued names]
            isinstance(context, (list, tuple))
            and len(context) == 2
            and isinstance(context[0], (list, tuple))
        ):
            context = context[0]
        if isinstance(t, type) and isinstance(context, (list, tuple)):
            keys = [str(k) for k in context]
            if len(keys) == len(items):  # ModelOutput, registered dataclasses
                return {"kind": "record", "type": _remember(t), "keys": keys, "items": items}
        raise CaptureError(
            f"the model returns a {getattr(t, '__name__', t)} that Cuvil cannot record; return "
            "tensors in tuples, lists, dicts, namedtuples, dataclasses or ModelOutputs"
        )

    return walk(spec)


def _is_fx(t: Any, base: type) -> bool:
    """torch.fx hands back its own ``immutable_list`` / ``immutable_dict``."""
    return isinstance(t, type) and issubclass(t, base) and t.__module__.startswith("torch.fx")


def leaf_count(structure: dict[str, Any]) -> int:
    if structure["kind"] == "tensor":
        return 1
    return sum(leaf_count(c) for c in structure.get("items", []))


def dumps(structure: dict[str, Any]) -> str:
    return json.dumps(structure, separators=(",", ":"))


def loads(text: str | None, n_outputs: int) -> Any:
    """The recorded structure (JSON), a legacy Python-literal structure, or a default."""
    if text is None:
        if n_outputs == 1:
            return {"kind": "tensor", "index": 0}
        leaves = [{"kind": "tensor", "index": i} for i in range(n_outputs)]
        return {"kind": "tuple", "items": leaves}
    if text.startswith("{\""):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise InputError(f"the module's output_structure is not valid JSON: {exc}") from None
    try:
        return _from_literal(ast.literal_eval(text))
    except (ValueError, SyntaxError) as exc:
        raise InputError(f"the module's output_structure {text[:80]!r} is malformed") from exc


def _from_literal(obj: Any) -> dict[str, Any]:
    if isinstance(obj, int):
        return {"kind": "tensor", "index": obj}
    if isinstance(obj, tuple):
        return {"kind": "tuple", "items": [_from_literal(o) for o in obj]}
    if isinstance(obj, list):
        return {"kind": "list", "items": [_from_literal(o) for o in obj]}
    if isinstance(obj, dict):
        return {
            "kind": "dict",
            "keys": list(obj),
            "items": [_from_literal(v) for v in obj.values()],
        }
    raise ValueError(f"bad structure leaf {obj!r}")


def rebuild(structure: dict[str, Any], outs: list[Any]) -> Any:
    """Put ``outs`` (by index) back into the recorded structure."""
    kind = structure.get("kind")
    if kind == "tensor":
        return outs[int(structure["index"])]
    if kind == "none":
        return None
    if kind == "const":
        return structure["value"]
    items = [rebuild(c, outs) for c in structure.get("items", [])]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    if kind == "dict":
        return dict(zip(structure["keys"], items))
    if kind == "namedtuple":
        return _namedtuple(structure)(items)
    if kind == "record":
        return _record(structure)(dict(zip(structure["keys"], items)))
    raise InputError(f"bad output structure kind {kind!r}")


def _namedtuple(structure: dict[str, Any]) -> Callable[[list[Any]], Any]:
    cls = _LIVE_TYPES.get(structure["type"])
    if cls is not None:
        if hasattr(cls, "n_fields"):  # structseq takes one sequence
            return lambda items: cls(items)
        return lambda items: cls(*items)
    short = str(structure["type"]).rsplit(".", 1)[-1]
    fields = [str(k) for k in structure["keys"]]
    stand_in = collections.namedtuple(short if short.isidentifier() else "Output", fields)
    return lambda items: stand_in(*items)


def _record(structure: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    cls = _LIVE_TYPES.get(structure["type"])
    name = str(structure["type"])
    if cls is None:
        return lambda fields: Record(name.rsplit(".", 1)[-1], fields)
    return lambda fields: cls(**fields)  # ModelOutput and dataclasses take their fields


__all__ = ["Record", "dumps", "encode", "leaf_count", "loads", "rebuild"]
