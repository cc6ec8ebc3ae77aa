"""Converters for reflection and replication padding (``F.pad(mode="reflect"|"replicate")``).

Each padded dim is one ``index_select`` with a constant index vector: reflection maps position
``i`` of the padded axis to ``|i|`` mirrored at both ends (the edge element is not repeated),
replication clamps it into ``[0, size)``. This is exact (a pure gather) and reuses an op every
pack has; negative pads crop, as in torch. These ATen ops are kept whole by the decomposition
table (``decompositions.PRESERVED``): torch's own decomposition spells the same gather as a chain
of ``arange``/``abs``/``index`` ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import rank, static_dim
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def pad_indices(mode: str, size: int, lo: int, hi: int) -> np.ndarray:
    """Source positions of the padded axis (length ``size + lo + hi``)."""
    i = np.arange(-lo, size + hi, dtype=np.int64)
    if mode == "replicate":
        return np.clip(i, 0, size - 1)
    i = np.abs(i)
    return np.where(i >= size, 2 * (size - 1) - i, i)


def _pad(mode: str, k: int) -> Conv:
    name = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d"

    def convert(cx: Converter, x: Value, padding: Sequence[int]) -> Value:
        pads = [int(p) for p in padding]
        if len(pads) != 2 * k or rank(x) not in (k + 1, k + 2):
            raise CaptureError(
                f"{name} takes {2 * k} pads and an input of rank {k + 1} or {k + 2}, got "
                f"{pads} and {x.type}"
            )
        y = x
        for j in range(k):  # pads[2j:2j+2] are (before, after) of dim -(j+1)
            lo, hi = pads[2 * j], pads[2 * j + 1]
            if lo == 0 and hi == 0:
                continue
            axis = rank(x) - 1 - j
            size = static_dim(x, axis, name)
            if mode == "reflect" and (lo >= size or hi >= size):
                raise CaptureError(
                    f"{name}: padding ({lo}, {hi}) must be smaller than the padded dim "
                    f"({size}), as torch requires"
                )
            if size + lo + hi < 0 or (size == 0 and lo + hi > 0):
                raise CaptureError(f"{name}: padding ({lo}, {hi}) of a dim of size {size}")
            index = cx.constant(pad_indices(mode, size, lo, hi), f"{mode}_index")
            y = cx.op("index_select", [y, index], axis=axis)
        return y

    return convert


TABLE: dict[str, Conv] = {
    **{f"aten::reflection_pad{k}d": _pad("reflect", k) for k in (1, 2, 3)},
    **{f"aten::replication_pad{k}d": _pad("replicate", k) for k in (1, 2, 3)},
}
