"""Converters for a few non-Core ATen ops that torch.export leaves in real models' graphs
(``diff`` and ``new_ones`` in ``transformers``' mask construction, for instance).

Converting them directly lets ``export_capture`` skip ``run_decompositions`` -- a full re-trace
of the program that costs seconds on a decoder stack -- when nothing else in the graph needs it
(see ``decompositions.needs_decomposition``). Each converter follows the op's ATen schema and
torch's documented semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cuvil_ref.frontend import shape_functional as sf
from cuvil_ref.frontend.aten.core import full
from cuvil_ref.frontend.context import Converter, dtype_to_torch
from cuvil_ref.frontend.convert_elementwise import binary
from cuvil_ref.ir.graph import Value


def diff(
    cx: Converter,
    x: Value,
    n: int = 1,
    dim: int = -1,
    prepend: Value | None = None,
    append: Value | None = None,
) -> Value:
    """``torch.diff``: the ``n``-th forward difference along ``dim`` after concatenating
    ``prepend``/``append``; bool tensors take ``!=`` (logical xor), as torch does."""
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = sf.cat(cx, parts, dim)
    op = "ne" if x.type.dtype.value == "bool" else "sub"
    for _ in range(int(n)):
        x = binary(cx, op, sf.slice_(cx, x, dim, 1, None), sf.slice_(cx, x, dim, 0, -1))
    return x


def new_full(cx: Converter, x: Value, size: Sequence[Any], fill_value: Any, **kwargs: Any) -> Value:
    """``x.new_full(size, fill)`` (and ``new_ones``/``new_zeros``): ``x``'s dtype by default."""
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = dtype_to_torch(x.type.dtype)
    return full(cx, size, fill_value, **kwargs)


TABLE: dict[str, Callable[..., Any]] = {
    "aten::diff": diff,
    "aten::new_ones": lambda cx, x, size, **kw: new_full(cx, x, size, 1, **kw),
    "aten::new_zeros": lambda cx, x, size, **kw: new_full(cx, x, size, 0, **kw),
    "aten::new_full": new_full,
}
