"""The compile cache: optimized (and quantized) modules stored as ``.cuvilir`` artifacts.

The key hashes everything the result depends on: the input graph's text, every weight's bytes,
the target spec and options, the compile options, and the versions of cuvil-ref, the plugin API and
the target's pack. Entries live under ``$CUVIL_CACHE_DIR`` (default: ``$XDG_CACHE_HOME/cuvil`` or
``~/.cache/cuvil``) in ``compile/``. A corrupt or unreadable entry is deleted, counted, and the
module is recompiled — never a crash. ``CUVIL_CACHE=0`` disables the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.graph import Module


def cache_dir() -> Path:
    root = os.environ.get("CUVIL_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "cuvil"


def cache_enabled(requested: bool | None) -> bool:
    if requested is not None:
        return requested
    return os.environ.get("CUVIL_CACHE", "1") not in ("0", "false", "no")


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0


STATS = CacheStats()


def compile_key(module: Module, parts: dict[str, Any]) -> str:
    """SHA-256 of the module (text + weight bytes) and the compile parameters in ``parts``."""
    from cuvil_ref.ir.printer import print_module, resource_table

    h = hashlib.sha256()
    h.update(print_module(module, inline_limit=0).encode())
    for name, arr in resource_table(module).items():
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(repr(arr.shape).encode())
        h.update(arr.data.cast("B") if arr.flags.c_contiguous else arr.tobytes())
    h.update(json.dumps(parts, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _paths(key: str) -> tuple[Path, Path]:
    d = cache_dir() / "compile"
    return d / f"{key}.cuvilir", d / f"{key}.json"


def lookup(key: str) -> tuple[Module, dict[str, Any]] | None:
    """The cached (module, report) for ``key``, or None (a corrupt entry is discarded)."""
    art, rep = _paths(key)
    if not art.exists() or not rep.exists():
        STATS.misses += 1
        return None
    from cuvil_ref.artifacts import load_module

    try:
        module = load_module(art)
        report = json.loads(rep.read_text(encoding="utf-8"))
        if not isinstance(report, dict) or report.get("key") != key:
            raise CuvilError("report does not match its key")
    except (CuvilError, OSError, ValueError) as exc:
        STATS.corrupt += 1
        STATS.misses += 1
        warnings.warn(f"discarding corrupt compile-cache entry {art.name}: {exc}", stacklevel=3)
        for p in (art, rep):
            with contextlib.suppress(OSError):
                p.unlink()
        return None
    STATS.hits += 1
    return module, report


def store(key: str, module: Module, report: dict[str, Any]) -> None:
    """Save an entry; failures to write (read-only disk...) only warn."""
    from cuvil_ref.artifacts import save_module

    art, rep = _paths(key)
    try:
        art.parent.mkdir(parents=True, exist_ok=True)
        save_module(module, art)
        tmp = rep.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({**report, "key": key}, default=str), encoding="utf-8")
        os.replace(tmp, rep)
    except OSError as exc:
        warnings.warn(f"could not write the compile cache at {art.parent}: {exc}", stacklevel=3)


def stats() -> dict[str, Any]:
    return {
        "hits": STATS.hits,
        "misses": STATS.misses,
        "corrupt": STATS.corrupt,
        "dir": str(cache_dir() / "compile"),
    }
