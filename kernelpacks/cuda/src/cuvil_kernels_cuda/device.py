"""The small device layer: lazy ``numba.cuda``, availability, buffers, streams, launches, graphs.

* :func:`cuda` imports ``numba.cuda`` on first call (never at package import).
* :class:`BufferPool` allocates device arrays once from a list of byte sizes, or carves typed views
  out of one device arena by (offset, shape, dtype), which is what a memory plan supplies.
* :class:`ExecutionContext` owns one stream; :class:`BoundLaunch` is a kernel with its launch
  configuration and arguments bound once, so replaying a plan is a loop of ``launch()`` calls.
* :func:`graph_support` says whether CUDA-graph capture is usable; numba-cuda has no graph API, so
  capture goes through ``cuda.bindings.driver`` on a real GPU and is 'unsupported' elsewhere.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

SIMULATOR_REASON = "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"


def in_simulator() -> bool:
    """True when Numba's CUDA simulator is selected (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cuda() -> ModuleType:
    """``numba.cuda``, imported on first use; raises ImportError naming what to install."""
    try:
        return importlib.import_module("numba.cuda")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "cuvil-kernels-cuda needs numba-cuda: `pip install numba-cuda` (and a CUDA GPU, or "
            "NUMBA_ENABLE_CUDASIM=1 for the CPU simulator)"
        ) from exc


def availability() -> tuple[bool, str]:
    """``(True, reason)`` when kernels can run here, else ``(False, why not)``; never raises."""
    try:
        numba_cuda = cuda()
    except ImportError as exc:
        return False, str(exc)
    if in_simulator():
        return True, SIMULATOR_REASON
    try:
        if numba_cuda.is_available():
            return True, f"CUDA GPU: {numba_cuda.get_current_device().name!r}"
    except Exception as exc:  # noqa: BLE001 - a broken driver must read as 'unavailable'
        return False, f"CUDA driver error: {exc}"
    return False, "no CUDA GPU found; set NUMBA_ENABLE_CUDASIM=1 to run on the CPU simulator"


def is_device_array(obj: object) -> bool:
    """True for numba device arrays (real or simulated): they can copy themselves to the host."""
    return hasattr(obj, "copy_to_host") and hasattr(obj, "shape")


def device_address(x: Any) -> int | None:
    """Device address of a device array's first element (None where it has no storage)."""
    ary = getattr(x, "_ary", None)  # the simulator keeps a numpy array
    if ary is not None and in_simulator():
        return int(ary.__array_interface__["data"][0])
    ptr = getattr(x, "device_ctypes_pointer", None)
    value = getattr(ptr, "value", None)
    return None if value is None else int(value)


def to_host(x: Any) -> np.ndarray:
    """A numpy copy of a device array (numpy arrays pass through)."""
    return x.copy_to_host() if is_device_array(x) else np.asarray(x)


# --- buffers --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One planned buffer: a byte ``offset`` into the arena, its ``shape`` and ``dtype``."""

    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


class BufferPool:
    """Device memory allocated once: separate buffers by size, or one arena carved into views."""

    ALIGN = 256

    def __init__(self, slot_nbytes: Sequence[int] = (), arena_nbytes: int = 0) -> None:
        nc = cuda()
        self.buffers = [nc.device_array(max(int(n), 1), dtype=np.uint8) for n in slot_nbytes]
        self.arena = nc.device_array(max(int(arena_nbytes), 1), dtype=np.uint8)
        self.arena_nbytes = int(arena_nbytes)

    def buffer(self, index: int, shape: Sequence[int], dtype: str) -> Any:
        """Typed view of separately allocated buffer ``index``."""
        return _typed_view(self.buffers[index], 0, tuple(shape), dtype, f"buffer {index}")

    def view(self, slot: Slot) -> Any:
        """Typed view of the arena at ``slot.offset`` (must be aligned to the dtype size)."""
        if slot.offset % np.dtype(slot.dtype).itemsize:
            raise ValueError(
                f"arena slot at offset {slot.offset} is not aligned to {slot.dtype}; the memory "
                f"plan must align offsets (to {self.ALIGN} bytes is always safe)"
            )
        return _typed_view(self.arena, slot.offset, slot.shape, slot.dtype, "arena")


def _typed_view(base: Any, offset: int, shape: tuple[int, ...], dtype: str, what: str) -> Any:
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if offset < 0 or offset + nbytes > base.size:
        raise ValueError(
            f"{what}: view of {nbytes} bytes at offset {offset} overruns its {base.size} bytes; "
            "the plan's sizes and offsets disagree"
        )
    raw = base[offset : offset + max(nbytes, np.dtype(dtype).itemsize)]
    flat = raw.view(np.dtype(dtype))
    return flat[: int(np.prod(shape, dtype=np.int64))].reshape(shape)


# --- streams and launches -------------------------------------------------------------------------


@dataclass
class ExecutionContext:
    """One execution context: its own stream; every launch of a plan goes to that stream."""

    stream: Any = field(default=None)

    def __post_init__(self) -> None:
        if self.stream is None:
            self.stream = cuda().stream()

    def synchronize(self) -> None:
        self.stream.synchronize()


@dataclass(frozen=True)
class BoundLaunch:
    """A kernel with grid, block, stream and arguments fixed once; ``launch()`` replays it."""

    kernel: Any
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[Any, ...]
    stream: Any = 0

    def launch(self) -> None:
        self.kernel[self.grid, self.block, self.stream](*self.args)


def bind(
    kernel: Any, grid: Sequence[int], block: Sequence[int], args: Sequence[Any], ctx: Any = None
) -> BoundLaunch:
    """Pre-bind ``kernel`` for repeated launches on ``ctx``'s stream (default stream if None)."""
    stream = ctx.stream if ctx is not None else 0
    return BoundLaunch(kernel, tuple(grid), tuple(block), tuple(args), stream)


# --- CUDA graphs ----------------------------------------------------------------------------------


def graph_support() -> tuple[bool, str]:
    """Whether stream capture into a CUDA graph works here, and why (not)."""
    if in_simulator():
        return False, "unsupported: the CUDA simulator has no graphs"
    ok, why = availability()
    if not ok:
        return False, f"unsupported: {why}"
    try:
        importlib.import_module("cuda.bindings.driver")
    except ImportError:
        return False, "unsupported: numba-cuda has no graph API and cuda.bindings is missing"
    return True, "stream capture through cuda.bindings.driver"


class GraphCapture:
    """Capture every launch on ``ctx``'s stream into a CUDA graph, then replay it with ``launch``.

    Use as ``with GraphCapture(ctx) as g: <launches>`` then ``g.launch()``. Raises RuntimeError
    naming the reason where :func:`graph_support` says 'unsupported'.
    """

    def __init__(self, ctx: ExecutionContext) -> None:
        ok, why = graph_support()
        if not ok:
            raise RuntimeError(f"CUDA graph capture {why}; replay the BoundLaunch list instead")
        self.ctx = ctx
        self._drv: Any = importlib.import_module("cuda.bindings.driver")
        self._exec: Any = None

    def _handle(self) -> Any:
        handle = self.ctx.stream.handle
        return getattr(handle, "value", handle)

    def __enter__(self) -> GraphCapture:
        drv = self._drv
        mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
        (err,) = drv.cuStreamBeginCapture(self._handle(), mode)
        _check(err, "cuStreamBeginCapture")
        return self

    def __exit__(self, *exc: object) -> None:
        err, graph = self._drv.cuStreamEndCapture(self._handle())
        _check(err, "cuStreamEndCapture")
        err, self._exec = self._drv.cuGraphInstantiate(graph, 0)
        _check(err, "cuGraphInstantiate")

    def launch(self) -> None:
        if self._exec is None:
            raise RuntimeError("GraphCapture.launch() before a capture finished")
        (err,) = self._drv.cuGraphLaunch(self._exec, self._handle())
        _check(err, "cuGraphLaunch")


def _check(err: Any, call: str) -> None:
    if int(err) != 0:
        raise RuntimeError(f"{call} failed with CUDA error {err}")
