"""Device helpers that turn a linear element index into a strided storage position."""

from __future__ import annotations

from numba import cuda

_device = cuda.jit(device=True)


@_device
def strided_pos(i, shape, strides, offset):  # noqa: ANN001, ANN201 - numba device function
    """Storage position of row-major element ``i`` of ``shape`` read with ``strides``."""
    pos = offset
    rem = i
    for d in range(shape.size - 1, -1, -1):
        n = shape[d]
        pos += (rem % n) * strides[d]
        rem //= n
    return pos


@_device
def strided_pos_row(i, shape, strides, row, offset):  # noqa: ANN001, ANN201
    """Like :func:`strided_pos` with the strides taken from row ``row`` of a 2-D table."""
    pos = offset
    rem = i
    for d in range(shape.size - 1, -1, -1):
        n = shape[d]
        pos += (rem % n) * strides[row, d]
        rem //= n
    return pos
