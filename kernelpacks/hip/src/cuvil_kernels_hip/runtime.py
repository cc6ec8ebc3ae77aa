"""Device layer of the hip pack: availability, module cache, arena buffers, streams, graphs.

CuPy is imported lazily, inside functions, so importing this module never needs a GPU or CuPy.

* ``availability()`` says whether kernels can run here and why not.
* ``load_module()`` returns a ``cupy.RawModule`` for a generated source. Binaries are cached on
  disk under ``$CUVIL_CACHE_DIR`` (default ``~/.cache/cuvil/hip``) at ``<arch>/<sha256>.cubin``
  (CUDA) or ``.hsaco`` (ROCm), built offline with nvcc/hipcc when one is on PATH; otherwise CuPy
  compiles with NVRTC/hiprtc (and keeps its own cache).
* ``Arena`` carves every device buffer of an executable from one allocation by
  ``BufferSpec(offset, shape, dtype)``.
* ``ExecutionContext`` owns one stream and a launch list. On CUDA its first ``run()`` captures
  the launches into a CUDA graph (``Stream.begin_capture``/``end_capture``) and later runs replay
  it; on ROCm CuPy does not support stream capture, so launches are issued one by one.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_kernels_hip.offline_compile import compile_source, compiler_available, compiler_for
from cuvil_kernels_hip.source import KernelSource

# The compiler's memory plan aligns to 64 B; WMMA fragments need 32 B, so 64 B is enough.
ARENA_ALIGNMENT = 64
# Storage dtypes numpy/CuPy lack are viewed as their raw bits.
_ARRAY_DTYPE = {"bfloat16": "uint16"}
ROCM_GRAPH_NOTE = "ROCm: CuPy does not support stream capture on HIP; launches are issued directly"


def availability() -> tuple[bool, str]:
    """(True, device description) when kernels can run, else (False, the reason)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False, "CuPy is not installed (pip install cupy-cuda12x or cupy-rocm-*)"
    except Exception as exc:  # a broken CuPy must not break the pack
        return False, f"CuPy failed to import: {exc}"
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no GPU visible to CuPy: {exc}"
    if count == 0:
        return False, "no GPU visible to CuPy: the CUDA/HIP runtime sees 0 devices"
    return True, f"{device_name()} ({'ROCm' if is_hip() else 'CUDA'}, {device_arch()})"


def device_name(device: int = 0) -> str:
    """The device's marketing name, e.g. ``NVIDIA H200`` (needs CuPy and a device)."""
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_features() -> tuple[str, ...]:
    """Target features of device 0: ``("tensor_core", "sm_90")`` or ``("hip", "gfx90a")``."""
    arch = device_arch()
    if is_hip():
        return ("hip", arch)
    return (("tensor_core",) if int(arch[3:]) >= 70 else ()) + (arch,)


def is_hip() -> bool:
    """Whether CuPy is built for ROCm (needs CuPy)."""
    import cupy

    return bool(cupy.cuda.runtime.is_hip)


def device_arch(device: int = 0) -> str:
    """``sm_XY`` on CUDA, ``gfxNNN`` on ROCm (needs CuPy and a device)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device)
    if is_hip():
        name = props["gcnArchName"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return name.split(":")[0]
    return f"sm_{props['major']}{props['minor']}"


def cache_dir() -> Path:
    """Root of the on-disk binary cache."""
    root = os.environ.get("CUVIL_CACHE_DIR")
    return Path(root) / "hip" if root else Path.home() / ".cache" / "cuvil" / "hip"


def cache_path(source: KernelSource, arch: str) -> Path:
    """Where the binary of ``source`` for ``arch`` is cached (keyed by source hash and arch)."""
    suffix = ".cubin" if arch.startswith("sm_") else ".hsaco"
    return cache_dir() / arch / f"{source.sha256}{suffix}"


def cached_binary(source: KernelSource, arch: str) -> Path | None:
    """Return the cached binary path, building it offline if a compiler is on PATH."""
    path = cache_path(source, arch)
    if path.exists():
        return path
    if not compiler_available(compiler_for(arch)):
        return None
    result = compile_source(source.code, arch)
    if not result.ok:
        raise RuntimeError(
            f"hip pack: {result.compiler} failed on kernel {source.entry} for {arch}:\n"
            f"{result.log[:4000]}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:  # atomic publish
        tmp.write(result.binary)
    os.replace(tmp.name, path)
    return path


_MODULES: dict[tuple[str, str], Any] = {}


def load_module(source: KernelSource, arch: str | None = None) -> Any:
    """A ``cupy.RawModule`` holding ``source``'s entry points (memoized per hash and arch)."""
    import cupy

    arch = arch or device_arch()
    key = (source.sha256, arch)
    if key not in _MODULES:
        binary = cached_binary(source, arch)
        if binary is not None:
            _MODULES[key] = cupy.RawModule(path=str(binary))
        else:
            _MODULES[key] = cupy.RawModule(code=source.code)
    return _MODULES[key]


@dataclass(frozen=True)
class BufferSpec:
    """A tensor living at ``offset`` bytes into the arena."""

    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.array_dtype).itemsize

    @property
    def array_dtype(self) -> str:
        """The numpy/CuPy dtype used to view the buffer (bfloat16 is viewed as uint16 bits)."""
        return _ARRAY_DTYPE.get(self.dtype, self.dtype)


def check_buffers(specs: dict[str, BufferSpec], arena_nbytes: int) -> None:
    """Raise if a buffer is misaligned (WMMA needs 32 B; we keep 64 B) or past the arena."""
    for name, spec in specs.items():
        if spec.offset % ARENA_ALIGNMENT:
            raise ValueError(
                f"buffer {name!r}: offset {spec.offset} is not a multiple of {ARENA_ALIGNMENT}"
            )
        if spec.offset < 0 or spec.offset + spec.nbytes > arena_nbytes:
            raise ValueError(
                f"buffer {name!r}: bytes [{spec.offset}, {spec.offset + spec.nbytes}) exceed the "
                f"arena of {arena_nbytes} bytes"
            )


class Arena:
    """One device allocation; every buffer is a view into it."""

    def __init__(self, nbytes: int, specs: dict[str, BufferSpec]) -> None:
        import cupy

        check_buffers(specs, nbytes)
        self.specs = specs
        self.raw = cupy.empty(max(nbytes, 1), dtype=cupy.uint8)

    def view(self, name: str) -> Any:
        spec = self.specs[name]
        flat = self.raw[spec.offset : spec.offset + spec.nbytes]
        return flat.view(spec.array_dtype).reshape(spec.shape)


@dataclass(frozen=True)
class Launch:
    """One kernel launch; ``args`` holds buffer names (str) or numpy scalars of exact C type."""

    source: KernelSource
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[object, ...]
    shared_mem: int = 0


@dataclass
class ExecutionContext:
    """One stream, one arena and a launch list; replays a CUDA graph where supported."""

    arena: Arena
    launches: list[Launch]
    use_graph: bool = True
    notes: list[str] = field(default_factory=list)
    _stream: Any = None
    _graph: Any = None

    def _issue(self) -> None:
        for launch in self.launches:
            kernel = load_module(launch.source).get_function(launch.source.entry)
            args = tuple(self.arena.view(a) if isinstance(a, str) else a for a in launch.args)
            kernel(launch.grid, launch.block, args, shared_mem=launch.shared_mem)

    @property
    def stream(self) -> Any:
        """The context's stream (created, and every module loaded, on first use)."""
        import cupy

        if self._stream is None:
            for launch in self.launches:  # load modules before any capture begins
                load_module(launch.source)
            self._stream = cupy.cuda.Stream(non_blocking=True)
        return self._stream

    @property
    def graph_replay(self) -> bool:
        return self.use_graph and not is_hip()

    def launch(self) -> None:
        """Enqueue all launches on the stream (no wait): capture once, then replay, on CUDA."""
        stream = self.stream
        with stream:
            if not self.graph_replay:
                if is_hip() and ROCM_GRAPH_NOTE not in self.notes:
                    self.notes.append(ROCM_GRAPH_NOTE)
                self._issue()
                return
            if self._graph is None:
                stream.begin_capture()
                try:
                    self._issue()
                finally:
                    self._graph = stream.end_capture()
            self._graph.launch(stream=stream)

    def run(self) -> None:
        """Execute all launches on this context's stream and wait for them."""
        self.launch()
        self.stream.synchronize()
