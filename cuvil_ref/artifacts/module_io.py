"""``mod.save(path)`` / ``cuvil.load(path)``: modules as ``.cuvilir`` artifacts.

Members of the container (see ``container``):

* ``meta.json`` — format name and version, cuvil version, creation time, module name, target and
  options (for compiled modules), and the SHA-256 of every other member. This is the document a
  signature signs.
* ``module.cuvil`` — the textual IR, every constant printed by reference.
* ``weights.json`` — index of the weights: name, dtype, shape, byte offset into ``weights.bin``.
  The names are the resource keys of the text (``printer.resource_table``): the constants of the
  graph and of every region, each distinct array once.
* ``weights.bin`` — the raw little-endian arrays, 64-byte aligned; loaded as read-only views of
  the file's bytes, which are read into memory once (see ``container``: a file changed on disk
  after loading cannot change or crash a loaded model).
* ``signature.json`` — optional Ed25519 signature of ``meta.json`` (``cuvil sign``).

Loading verifies every digest and never executes code: JSON, text IR and raw arrays only. Every
JSON member is strict (``strict_json``) and checked field by field, so a malformed file is an
:class:`~cuvil_ref.errors.ArtifactError` that names the member and the field.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_ref.artifacts.container import ALIGN, Container, write_container
from cuvil_ref.artifacts.strict_json import MAX_INT, check, field, load_json
from cuvil_ref.errors import (
    ArtifactFormatError,
    ArtifactIntegrityError,
    ArtifactVersionError,
    IRError,
    shorten,
)
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Module

FORMAT = "cuvilir"
META_VERSION = 1
SIGNED_MEMBERS = ("module.cuvil", "weights.json", "weights.bin")
#: numpy's own limit on the number of dimensions.
MAX_RANK = 64


def module_members(module: Module, extra_meta: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """The members of the artifact for ``module`` (without a signature)."""
    from cuvil_ref import __version__
    from cuvil_ref.ir.printer import print_module, resource_table

    text = print_module(module, inline_limit=0).encode("utf-8")
    index = []
    blob = bytearray()
    for name, arr in resource_table(module).items():
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
    """``meta.json``, checked: a cuvilir of a version this cuvil-ref reads, with its digests."""
    where = f"{container.path!r}: meta.json"
    meta = load_json(bytes(container.read("meta.json")), where)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactFormatError(f"{where} does not describe a cuvilir")
    if meta.get("format_version") != META_VERSION:
        raise ArtifactVersionError(
            f"{container.path!r} was written with artifact format version "
            f"{shorten(repr(meta.get('format_version')), 40)} by cuvil "
            f"{shorten(repr(meta.get('cuvil_version')), 40)}; this cuvil-ref reads version "
            f"{META_VERSION}"
        )
    digests = field(meta, "sha256", "object", where)
    for name in SIGNED_MEMBERS:
        check(digests.get(name), "str", f"{where}: sha256 of {name!r}")
    return meta


def _check_digests(container: Container, meta: Mapping[str, Any]) -> None:
    for name in SIGNED_MEMBERS:
        got = hashlib.sha256(container.read(name)).hexdigest()
        if meta["sha256"][name] != got:
            raise ArtifactIntegrityError(
                f"{container.path!r}: member {name!r} does not match the digest in meta.json"
            )


def _read_weights(container: Container) -> dict[str, np.ndarray]:
    """The weights as read-only views of the container's bytes, checked against the index."""
    where = f"{container.path!r}: weights.json"
    index = check(load_json(bytes(container.read("weights.json")), where), "list", where)
    blob = container.read("weights.bin")
    constants: dict[str, np.ndarray] = {}
    for i, entry in enumerate(index):
        at = f"{where}: entry #{i}"
        name = field(entry, "name", "str", at)
        at = f"{where}: weight {shorten(repr(name))}"
        try:
            dtype = DType(field(entry, "dtype", "str", at)).numpy.newbyteorder("<")
        except ValueError:
            raise ArtifactFormatError(
                f"{at}: unknown dtype {shorten(repr(entry['dtype']), 40)}"
            ) from None
        dims = field(entry, "shape", "list", at)
        if len(dims) > MAX_RANK:
            raise ArtifactFormatError(f"{at}: rank {len(dims)} exceeds {MAX_RANK}")
        shape = tuple(check(d, "int", f"{at}: a dimension") for d in dims)
        off, nbytes = field(entry, "offset", "int", at), field(entry, "nbytes", "int", at)
        count = math.prod(shape)
        if count * dtype.itemsize != nbytes or count > MAX_INT:
            raise ArtifactFormatError(
                f"{at}: shape {shorten(str(list(shape)), 60)} of {dtype.name} needs "
                f"{shorten(str(count * dtype.itemsize), 30)} bytes, the index says {nbytes}"
            )
        if off + nbytes > len(blob):
            raise ArtifactFormatError(f"{at} lies outside weights.bin")
        if name in constants:
            raise ArtifactFormatError(f"{at} appears twice")
        arr = np.frombuffer(blob, dtype=dtype, count=count, offset=off).reshape(shape)
        constants[name] = arr
    return constants


def load_module(path: str | Path, *, trusted_keys: Sequence[Any] | None = None) -> Module:
    """Load and verify an artifact. With ``trusted_keys``, refuse unsigned or wrongly signed
    files. Weights are read-only views of one in-memory copy of the file (see ``container``)."""
    container = Container(path)
    meta = read_meta(container)
    _check_digests(container, meta)
    if trusted_keys is not None:
        from cuvil_ref.artifacts.signing import verify_container

        verify_container(container, trusted_keys)
    constants = _read_weights(container)
    try:
        text = bytes(container.read("module.cuvil")).decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise ArtifactFormatError(
            f"{container.path!r}: module.cuvil is not UTF-8 text: {exc.reason}"
        ) from None
    from cuvil_ref.ir.parser import parse_module

    try:
        module = parse_module(text, constants=constants, source=f"{path}:module.cuvil")
    except IRError as exc:  # a parse error, or a module the verifier refuses
        raise ArtifactFormatError(f"{container.path!r}: {exc}") from exc
    return module


def artifact_info(path: str | Path) -> dict[str, Any]:
    """meta.json of a verified artifact plus its member sizes (for ``cuvil inspect``)."""
    with Container(path) as c:
        meta = read_meta(c)
        meta["members"] = {n: i.size for n, i in c.members.items()}
        meta["signed"] = "signature.json" in c.members
        return meta
