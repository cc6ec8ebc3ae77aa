"""Starting Numba's threading layer at compile time rather than inside the first inference."""

from __future__ import annotations

import numpy as np
from numba import prange

from cuvil_kernels_cpu.kernels.isa import kernel


@kernel
def _touch(x):  # type: ignore[no-untyped-def]
    for i in prange(x.size):
        x[i] = i


def warm(threads: int) -> None:
    """Run one tiny parallel loop with ``threads`` threads (starts the worker pool once)."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        _touch(np.zeros(64))
    finally:
        numba.set_num_threads(before)
