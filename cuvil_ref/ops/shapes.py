"""Shape arithmetic shared by op inference: broadcasting, axis normalization, symbolic sizes.

Dims are ints or symbol names (see ``cuvil_ref.ir.types``). Helpers here never guess: a symbol is
only known to equal itself, and a mismatch raises :class:`ShapeError` with both shapes.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import Dim, Shape, format_shape


def broadcast_shapes(*shapes: Sequence[Dim]) -> Shape:
    """NumPy/PyTorch broadcasting of several shapes, with symbolic dims.

    A symbol broadcasts against 1 and against itself; against another size it is an error, since
    its run-time value is unknown.
    """
    rank = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for i in range(rank):
        dim: Dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1 or d == dim:
                continue
            if dim == 1:
                dim = d
                continue
            shown = " and ".join(f"[{format_shape(x)}]" for x in shapes)
            raise ShapeError(f"shapes {shown} cannot be broadcast (dim {i}: {dim} vs {d})")
        result.append(dim)
    return tuple(result)


def normalize_axis(axis: int, rank: int, *, allow_end: bool = False) -> int:
    """Map a possibly negative axis into ``[0, rank)`` (``[0, rank]`` if ``allow_end``)."""
    hi = rank + 1 if allow_end else rank
    a = axis + hi if axis < 0 else axis
    if not 0 <= a < hi:
        raise ShapeError(f"axis {axis} is out of range for rank {rank}")
    return a


def normalize_axes(axes: Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Sorted unique non-negative axes; ``None`` or empty means all axes."""
    if axes is None or len(axes) == 0:
        return tuple(range(rank))
    out = sorted({normalize_axis(a, rank) for a in axes})
    if len(out) != len(axes):
        raise ShapeError(f"repeated axis in {tuple(axes)}")
    return tuple(out)


def symbolic_numel(shape: Sequence[Dim]) -> tuple[int, tuple[str, ...]]:
    """(product of the int dims, sorted symbols) — the element count as a monomial."""
    n = 1
    syms: list[str] = []
    for d in shape:
        if isinstance(d, str):
            syms.append(d)
        else:
            n *= d
    return n, tuple(sorted(syms))


def dims_equal(a: Dim, b: Dim) -> bool:
    return a == b


def resolve_dim(d: Dim, bindings: dict[str, int]) -> int:
    """The int value of a dim under symbol bindings."""
    if isinstance(d, int):
        return d
    try:
        return bindings[d]
    except KeyError:
        raise ShapeError(f"symbolic dim '{d}' has no value bound") from None


def conv_out_size(
    size: Dim,
    kernel: int,
    stride: int,
    pad_lo: int,
    pad_hi: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> Dim:
    """Output length of a sliding window (conv/pool); symbolic sizes stay symbolic only if the
    window is the identity (kernel 1, stride 1, no padding)."""
    if isinstance(size, str):
        if kernel == 1 and stride == 1 and pad_lo == 0 and pad_hi == 0:
            return size
        raise ShapeError(
            f"a sliding window over symbolic dim '{size}' is not supported; "
            "make spatial dims static"
        )
    span = dilation * (kernel - 1) + 1
    total = size + pad_lo + pad_hi - span
    out = (-(-total // stride) if ceil_mode else total // stride) + 1
    # PyTorch (ceil_mode): the last window must start inside the input or left padding. A window
    # larger than the padded input still gives one output there (a global pool, clipped).
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    if (total < 0 and not ceil_mode) or out < 1:
        raise ShapeError(
            f"window of extent {span} does not fit input length {size} with padding "
            f"({pad_lo}, {pad_hi})"
        )
    return out
