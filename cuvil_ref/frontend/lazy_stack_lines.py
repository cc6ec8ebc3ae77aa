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
import traceback
from typing import Any

from cuvil_ref.shared_switch import SharedSwitch


def _lazy_extract_symbolized_tb(tb: Any, skip: int) -> traceback.StackSummary:
    """torch's ``_extract_symbolized_tb`` without reading every frame's line up front."""
    stack = traceback.StackSummary()
    for f in reversed(tb[skip:]):
        stack.append(traceback.FrameSummary(f["filename"], f["line"], f["name"], lookup_line=False))
    return stack


def _swap_in() -> Any:
    """Install the lazy helper; returns torch's own (None where this torch has none)."""
    import torch.utils._traceback as torch_tb

    original = getattr(torch_tb, "_extract_symbolized_tb", None)
    if original is not None:
        torch_tb._extract_symbolized_tb = _lazy_extract_symbolized_tb
    return original


def _swap_out(original: Any) -> None:
    if original is not None:
        import torch.utils._traceback as torch_tb

        torch_tb._extract_symbolized_tb = original


_SWAP = SharedSwitch(_swap_in, _swap_out)


def lazy_stack_lines() -> contextlib.AbstractContextManager[None]:
    """Within the block, torch builds recorded stack traces with lazily read source lines."""
    return _SWAP.hold()
