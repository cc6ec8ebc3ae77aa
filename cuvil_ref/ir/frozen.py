"""An immutable, hashable mapping used for node attributes and metadata."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def freeze(value: Any) -> Any:
    """Turn lists into tuples and dicts into FrozenDicts, recursively."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return FrozenDict(value)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


class FrozenDict(Mapping[str, Any]):
    """A read-only dict whose values are frozen recursively. Key order is insertion order."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        merged = dict(data or {})
        merged.update(kwargs)
        self._data = {k: freeze(v) for k, v in merged.items()}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(sorted((k, _hashable(v)) for k, v in self._data.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def replace(self, **changes: Any) -> FrozenDict:
        """A copy with some keys changed or added."""
        data = dict(self._data)
        data.update(changes)
        return FrozenDict(data)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)
