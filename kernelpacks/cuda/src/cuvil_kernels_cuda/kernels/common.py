"""Shared host-side plumbing: the kernel cache, launch sizes and strided tensor arguments.

A tensor reaches a generic kernel as (flat storage, element strides, element offset), as in
minitorch: broadcasting is a stride of 0, a permuted or sliced view is just other strides, so one
kernel serves every layout without copies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_kernels_cuda.device import cuda, in_simulator, is_device_array

_CACHE: dict[tuple[Any, ...], Any] = {}

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def cached(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The kernel for ``key``, built (and jitted) once per process."""
    kernel = _CACHE.get(key)
    if kernel is None:
        kernel = _CACHE[key] = build()
    return kernel


def cache_size() -> int:
    return len(_CACHE)


def threads_1d() -> int:
    """Threads per block for 1-D kernels: small in the simulator (one Python thread each)."""
    return 32 if in_simulator() else 256


def gemm_tile() -> int:
    """Square GEMM tile edge: the :func:`recording` override, else 8 in the simulator (64 Python
    threads per block) and 16 on a GPU."""
    tile = getattr(_STATE, "tile", 0)
    if tile:
        return int(tile)
    return 8 if in_simulator() else 16


# --- launches and recording -----------------------------------------------------------------------

_STATE = threading.local()


@dataclass(frozen=True)
class Launch:
    """One recorded launch: kernel, grid, block and the exact argument objects it was given."""

    kernel: Any
    grid: Any
    block: Any
    args: tuple[Any, ...]


def launch(kernel: Any, grid: Any, block: Any, *args: Any) -> None:
    """Launch ``kernel[grid, block](*args)``; inside :func:`recording` also remember it.

    Every launch of the library goes through here, so a lowering can run the library once on
    preallocated device arrays and replay the recorded launches (arguments pre-bound) afterwards.
    """
    kernel[grid, block](*args)
    log = getattr(_STATE, "log", None)
    if log is not None:
        log.append(Launch(kernel, grid, block, tuple(args)))


def loop_unroll() -> int:
    """Unroll factor of the K loops of the GEMV kernel: the :func:`recording` override, else 1."""
    return int(getattr(_STATE, "unroll", 1) or 1)


@contextmanager
def recording(tile: int = 0, unroll: int = 1) -> Iterator[list[Launch]]:
    """Record every :func:`launch` of this thread into the yielded list; ``tile`` (8/16/32, 0 =
    default) overrides :func:`gemm_tile` and ``unroll`` :func:`loop_unroll` meanwhile."""
    prev = (getattr(_STATE, "log", None), getattr(_STATE, "tile", 0), getattr(_STATE, "unroll", 1))
    _STATE.log, _STATE.tile, _STATE.unroll = [], tile, unroll
    try:
        yield _STATE.log
    finally:
        _STATE.log, _STATE.tile, _STATE.unroll = prev


def blocks_for(n: int, threads: int) -> int:
    return max(1, (n + threads - 1) // threads)


def i64(values: Sequence[int]) -> Any:
    """A small int64 device array of launch metadata (shapes, strides); never empty."""
    arr = np.asarray(list(values) or [0], dtype=np.int64)
    return cuda().to_device(arr)


def f32(values: Sequence[float]) -> Any:
    arr = np.asarray(list(values) or [0.0], dtype=np.float32)
    return cuda().to_device(arr)


@dataclass(frozen=True)
class Strided:
    """A tensor as flat device storage, logical shape, element strides and element offset."""

    data: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.data.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def broadcast_to(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Strides that read this tensor broadcast (numpy rules) to ``shape``."""
        nd = len(shape)
        if len(self.shape) > nd:
            raise ValueError(f"cannot broadcast shape {self.shape} to {tuple(shape)}")
        pad = nd - len(self.shape)
        out = [0] * pad
        for dim, (s, st) in enumerate(zip(self.shape, self.strides, strict=True)):
            target = shape[pad + dim]
            if s == target:
                out.append(st)
            elif s == 1:
                out.append(0)
            else:
                raise ValueError(f"cannot broadcast shape {self.shape} to {tuple(shape)}")
        return tuple(out)


def strided(x: Any, name: str = "input") -> Strided:
    """Describe ``x`` (numpy array of any strides, or contiguous device array) as :class:`Strided`.

    A numpy view is uploaded as the smallest span of its base that covers it, so a transposed or
    stepped view keeps its strides instead of being copied into a new layout on the host.
    """
    if is_device_array(x):
        if not x.is_c_contiguous():
            raise ValueError(
                f"{name}: non-contiguous device arrays are not supported; pass a numpy view or "
                "describe the view with offsets/strides of a contiguous buffer"
            )
        shape = tuple(int(s) for s in x.shape)
        return Strided(x.reshape(max(x.size, 1)) if x.size else x, shape, _c_strides(shape), 0)
    a = np.asarray(x)
    if a.dtype.byteorder not in ("=", "|"):
        a = a.astype(a.dtype.newbyteorder("="))
    item = a.itemsize
    if any(st % item for st in a.strides):
        a = np.ascontiguousarray(a)
    shape = tuple(int(s) for s in a.shape)
    if a.size == 0:
        return Strided(cuda().to_device(np.zeros(1, a.dtype)), shape, _c_strides(shape), 0)
    strides = [st // item for st in a.strides]
    # Flip negative-stride axes so the view starts at the lowest address; the offset undoes it.
    flips = tuple(slice(None, None, -1) if st < 0 else slice(None) for st in strides)
    base = a[flips]
    offset = sum((n - 1) * -st for n, st in zip(shape, strides, strict=True) if st < 0)
    span = 1 + sum((n - 1) * abs(st) for n, st in zip(shape, strides, strict=True))
    flat = np.lib.stride_tricks.as_strided(base, shape=(span,), strides=(item,))
    return Strided(cuda().to_device(np.array(flat)), shape, tuple(strides), offset)


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(out))


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape``."""
    return _c_strides(shape)


def as_device(x: Any, dtype: Any = None) -> Any:
    """``x`` as a C-contiguous device array (numpy is uploaded, optionally cast to ``dtype``)."""
    if is_device_array(x):
        if dtype is not None and np.dtype(x.dtype) != np.dtype(dtype):
            raise TypeError(f"expected a {np.dtype(dtype)} device array, got {x.dtype}")
        if not x.is_c_contiguous():
            raise ValueError("expected a C-contiguous device array")
        return x
    a = np.ascontiguousarray(x, dtype=dtype)
    return cuda().to_device(a)


def new_output(shape: Sequence[int], dtype: Any, out: Any = None, op: str = "") -> Any:
    """A fresh C-contiguous device array, or the caller's ``out`` after checking it fits."""
    shape = tuple(int(s) for s in shape)
    if out is None:
        return cuda().device_array(shape, dtype=np.dtype(dtype))
    if tuple(out.shape) != shape or np.dtype(out.dtype) != np.dtype(dtype):
        want = f"{shape} {np.dtype(dtype)}"
        raise ValueError(f"{op}: out has shape {tuple(out.shape)} {out.dtype}, expected {want}")
    if not out.is_c_contiguous():
        raise ValueError(f"{op}: out must be C-contiguous")
    return out


def flat(x: Any) -> Any:
    """A 1-D view of a C-contiguous device array (size 0 stays as is)."""
    return x.reshape(x.size) if x.size else x


def check_float(op: str, *dtypes: np.dtype) -> np.dtype:
    """The shared float storage dtype (float32 or float16) of ``dtypes``, else a clear error."""
    for dt in dtypes:
        if np.dtype(dt) not in FLOAT_DTYPES:
            raise TypeError(
                f"{op}: dtype {dt} is not supported by the cuda pack; use float32 or float16 "
                "(int8 goes through the quantized kernels)"
            )
    kinds = {np.dtype(d) for d in dtypes}
    return np.dtype(np.float16) if kinds == {np.dtype(np.float16)} else np.dtype(np.float32)
