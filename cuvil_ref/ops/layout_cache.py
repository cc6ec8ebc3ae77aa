"""A cache of re-laid-out weights for op references (e.g. conv taps in GEMM order).

Graph constants are read-only arrays that live as long as their module, so a layout derived
from one can be computed once and reused on every call instead of being copied per inference.
Only read-only arrays are cached (a writeable array may change between calls); an entry is
dropped when its array is garbage collected.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable

import numpy as np

_CACHE: dict[tuple[int, Hashable], tuple[weakref.ref, np.ndarray]] = {}
_LOCK = threading.Lock()


def cached_layout(
    array: np.ndarray, key: Hashable, make: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """``make(array)``, memoized per (array, key) when ``array`` is read-only."""
    if array.flags.writeable:
        return make(array)
    ident = (id(array), key)
    with _LOCK:
        hit = _CACHE.get(ident)
        if hit is not None and hit[0]() is array:
            return hit[1]
    result = make(array)
    result.flags.writeable = False
    try:
        ref = weakref.ref(array, lambda _r, ident=ident, cache=_CACHE: cache.pop(ident, None))
    except TypeError:  # pragma: no cover - every ndarray supports weak references
        return result
    with _LOCK:
        _CACHE[ident] = (ref, result)
    return result
