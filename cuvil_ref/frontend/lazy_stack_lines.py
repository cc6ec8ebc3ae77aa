"""Make torch.export's stack-trace recording read source lines lazily while Cuvil exports.

torch.export records the Python stack of every node it creates (``node.meta["stack_trace"]``,
which gives Cuvil the user's source line). For each node torch symbolizes the whole stack (~70
frames inside torch and ``transformers``) into ``traceback.FrameSummary`` objects, each of which
reads its source line from ``linecache`` at once -- then keeps only the few frames of the model's
``forward`` methods. On a Llama-like stack (650 nodes) that is ~45,000 line reads, a tenth of the
export. :func:`lazy_stack_lines` swaps torch's helper for one that builds the same frames with
``lookup_line=False``: a frame reads its line only when formatted, so the recorded traces are
the same text (``tests/frontend/test_lazy_stack_lines.py`` compares them). Nested and concurrent
exports share one swap (a counter); torch without the helper is left alone.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()
_DEPTH = 0
_ORIGINAL: Any = None


def _lazy_extract_symbolized_tb(tb: Any, skip: int) -> traceback.StackSummary:
    """torch's ``_extract_symbolized_tb`` without reading every frame's line up front."""
    stack = traceback.StackSummary()
    for f in reversed(tb[skip:]):
        stack.append(traceback.FrameSummary(f["filename"], f["line"], f["name"], lookup_line=False))
    return stack


@contextlib.contextmanager
def lazy_stack_lines() -> Iterator[None]:
    """Within the block, torch builds recorded stack traces with lazily read source lines."""
    global _DEPTH, _ORIGINAL
    import torch.utils._traceback as torch_tb

    with _LOCK:
        if _DEPTH == 0:
            _ORIGINAL = getattr(torch_tb, "_extract_symbolized_tb", None)
            if _ORIGINAL is not None:
                torch_tb._extract_symbolized_tb = _lazy_extract_symbolized_tb
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _ORIGINAL is not None:
                torch_tb._extract_symbolized_tb = _ORIGINAL
                _ORIGINAL = None
