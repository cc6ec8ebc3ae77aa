"""``mod.save(path)`` / ``cuvil.load(path)``: modules as ``.cuvilir`` artifacts.

Members of the container (see ``container``):

* ``meta.json`` — format name and version, cuvil version, creation time, module name, target and
  options (for compiled modules), and the SHA-256 of every other member. This is the document a
  signature signs.
* ``module.cuvil`` — the textual IR, every constant printed by reference.
* ``weights.json`` — index of the weights: name, dtype, shape, byte offset into ``weights.bin``.
* ``weights.bin`` — the raw little-endian arrays, 64-byte aligned; loaded as read-only views of
  the memory-mapped file (no copy).
* ``signature.json`` — optional Ed25519 signature of ``meta.json`` (``cuvil sign``).

Loading verifies every digest and never executes code: JSON, text IR and raw arrays only.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_ref.artifacts.container import ALIGN, Container, write_container
from cuvil_ref.errors import (
    ArtifactFormatError,
    ArtifactIntegrityError,
    ArtifactVersionError,
    ParseError,
)
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Module

FORMAT = "cuvilir"
META_VERSION = 1
SIGNED_MEMBERS = ("module.cuvil", "weights.json", "weights.bin")


def module_members(module: Module, extra_meta: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """The members of the artifact for ``module`` (without a signature)."""
    from cuvil_ref import __version__
    from cuvil_ref.ir.printer import print_module

    text = print_module(module, inline_limit=0).encode("utf-8")
    index = []
    blob = bytearray()
    for name, arr in module.graph.constants.items():
        a = np.asarray(arr, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
        le = a.astype(a.dtype.newbyteorder("<"), copy=False) if a.dtype.byteorder == ">" else a
        blob += b"\0" * ((-len(blob)) % ALIGN)
        index.append(
            {
                "name": name,
                "dtype": DType.from_numpy(a.dtype).value,
                "shape": list(a.shape),
                "offset": len(blob),
                "nbytes": a.nbytes,
            }
        )
        blob += le.tobytes()
    members = {
        "module.cuvil": text,
        "weights.json": json.dumps(index, indent=1).encode(),
        "weights.bin": bytes(blob),
    }
    meta = {
        "format": FORMAT,
        "format_version": META_VERSION,
        "cuvil_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "module": module.name,
        "target": None,
        "options": {},
        "sha256": {k: hashlib.sha256(v).hexdigest() for k, v in members.items()},
    }
    meta.update(dict(extra_meta or {}))
    members["meta.json"] = json.dumps(meta, indent=1, sort_keys=True, default=str).encode()
    return members


def save_module(
    module: Module,
    path: str | Path,
    *,
    target: Any = None,
    options: Mapping[str, Any] | None = None,
    extra_meta: Mapping[str, Any] | None = None,
) -> None:
    """Write ``module`` to ``path`` (atomically)."""
    meta: dict[str, Any] = dict(extra_meta or {})
    if target is not None:
        meta["target"] = target
    if options:
        meta["options"] = dict(options)
    members = module_members(module, meta)
    write_container(path, {"meta.json": members.pop("meta.json"), **members})


def read_meta(container: Container) -> dict[str, Any]:
    try:
        meta = json.loads(bytes(container.read("meta.json")))
    except ValueError as exc:
        raise ArtifactFormatError(f"{container.path!r}: meta.json is not JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactFormatError(f"{container.path!r}: meta.json does not describe a cuvilir")
    if meta.get("format_version") != META_VERSION:
        raise ArtifactVersionError(
            f"{container.path!r} was written with artifact format version "
            f"{meta.get('format_version')} by cuvil {meta.get('cuvil_version')}; this cuvil-ref "
            f"reads version {META_VERSION}"
        )
    return meta


def load_module(
    path: str | Path, *, trusted_keys: Sequence[Any] | None = None, mmap: bool = True
) -> Module:
    """Load and verify an artifact. With ``trusted_keys``, refuse unsigned or wrongly signed
    files. Weights are read-only views of the memory-mapped file (``mmap=False`` copies them)."""
    container = Container(path)
    meta = read_meta(container)
    digests = meta.get("sha256", {})
    for name in SIGNED_MEMBERS:
        got = hashlib.sha256(container.read(name)).hexdigest()
        if digests.get(name) != got:
            raise ArtifactIntegrityError(
                f"{container.path!r}: member {name!r} does not match the digest in meta.json"
            )
    if trusted_keys is not None:
        from cuvil_ref.artifacts.signing import verify_container

        verify_container(container, trusted_keys)
    try:
        index = json.loads(bytes(container.read("weights.json")))
        blob = container.read("weights.bin")
        constants: dict[str, np.ndarray] = {}
        for entry in index:
            dtype = DType(entry["dtype"]).numpy.newbyteorder("<")
            shape = tuple(int(d) for d in entry["shape"])
            off, nbytes = int(entry["offset"]), int(entry["nbytes"])
            count = int(np.prod(shape)) if shape else 1
            if off < 0 or off + nbytes > len(blob) or count * dtype.itemsize != nbytes:
                raise ArtifactFormatError(f"weight {entry['name']!r} lies outside weights.bin")
            arr = np.frombuffer(blob, dtype=dtype, count=count, offset=off).reshape(shape)
            constants[str(entry["name"])] = arr if mmap else arr.copy()
    except (ValueError, KeyError, TypeError) as exc:
        raise ArtifactFormatError(f"{container.path!r}: bad weights index: {exc}") from None
    try:
        text = bytes(container.read("module.cuvil")).decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise ArtifactFormatError(
            f"{container.path!r}: module.cuvil is not UTF-8 text: {exc}"
        ) from None
    from cuvil_ref.ir.parser import parse_module

    try:
        module = parse_module(text, constants=constants, source=f"{path}:module.cuvil")
    except ParseError as exc:
        raise ArtifactFormatError(f"{container.path!r}: {exc}") from exc
    return module


def artifact_info(path: str | Path) -> dict[str, Any]:
    """meta.json of a verified artifact plus its member sizes (for ``cuvil inspect``)."""
    with Container(path) as c:
        meta = read_meta(c)
        meta["members"] = {n: i.size for n, i in c.members.items()}
        meta["signed"] = "signature.json" in c.members
        return meta
