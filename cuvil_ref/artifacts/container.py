"""The ``.cuvilir`` container: a small, pickle-free, memory-mappable file format.

Layout (all integers little-endian)::

    offset 0   magic        8 bytes  b"CUVILIR\\0"
           8   version      u32      FORMAT_VERSION
          12   header_len   u64
          20   header_sha   32 bytes sha256 of the header bytes
          52   header       header_len bytes of UTF-8 JSON:
                            {"members": [{"name", "offset", "size", "sha256"}, ...]}
           …   zero padding to a 64-byte boundary, then each member at a 64-byte aligned offset,
               zero padding between members, nothing after the last one.

Reading checks the magic, the version, the header digest, every member digest, that members do
not overlap and lie inside the file, that all padding is zero and that nothing trails the last
member — so a flipped bit anywhere in the file is refused. The header is strict JSON
(:mod:`~cuvil_ref.artifacts.strict_json`): every field has its JSON type, integers are bounded.
Nothing is ever unpickled or executed.

The file is read into memory once, on open, and every check and every member view works on that
private copy; the file is not memory-mapped. So a file rewritten or truncated on disk after it was
loaded cannot change a loaded model's weights or crash the process (a truncated memory map raises
SIGBUS on the next access), and what was verified is what runs. The cost is resident memory equal
to the file's size, the same as reading the weights any other way; weights are read-only numpy
views into that copy, not a second copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuvil_ref.artifacts.strict_json import field, load_json
from cuvil_ref.errors import (
    ArtifactFormatError,
    ArtifactIntegrityError,
    ArtifactVersionError,
    shorten,
)

MAGIC = b"CUVILIR\0"
FORMAT_VERSION = 1
ALIGN = 64
_PREAMBLE = struct.Struct("<8sIQ32s")


def _pad(n: int) -> int:
    return (-n) % ALIGN


@dataclass(frozen=True)
class MemberInfo:
    name: str
    offset: int
    size: int
    sha256: str


def write_container(path: str | Path, members: Mapping[str, bytes | memoryview]) -> None:
    """Write ``members`` (name -> bytes) atomically to ``path``."""
    names = list(members)
    sizes = [len(members[n]) for n in names]
    # The header's length depends on the offsets it records; iterate until it is stable.
    header_len = 0
    for _ in range(4):
        offset = _PREAMBLE.size + header_len
        offset += _pad(offset)
        infos = []
        for name, size in zip(names, sizes):
            infos.append(
                {
                    "name": name,
                    "offset": offset,
                    "size": size,
                    "sha256": hashlib.sha256(members[name]).hexdigest(),
                }
            )
            offset += size + _pad(size)
        header = json.dumps({"members": infos}, sort_keys=True).encode()
        if len(header) == header_len:
            break
        header_len = len(header)
    else:  # pragma: no cover - converges in two rounds
        raise ArtifactFormatError("could not lay out the container header")
    tmp = Path(f"{path}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(_PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header), hashlib.sha256(header).digest()))
        f.write(header)
        f.write(b"\0" * _pad(_PREAMBLE.size + len(header)))
        for name, size in zip(names, sizes):
            f.write(members[name])
            if name != names[-1]:
                f.write(b"\0" * _pad(size))
    os.replace(tmp, path)


class Container:
    """A verified artifact read into memory. Use as a context manager or call ``close``."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        p = Path(self.path)
        if not p.exists():
            raise ArtifactFormatError(f"artifact file {self.path!r} does not exist")
        if p.is_dir():
            raise ArtifactFormatError(f"{self.path!r} is a directory, not an artifact")
        try:
            with open(p, "rb") as f:
                self._data = f.read()
        except OSError as exc:
            raise ArtifactFormatError(f"cannot read {self.path!r}: {exc.strerror}") from None
        self.size = len(self._data)
        if self.size < _PREAMBLE.size:
            raise ArtifactFormatError(
                f"{self.path!r} is truncated or not a .cuvilir file ({self.size} bytes)"
            )
        self.members = self._verify()

    def _verify(self) -> dict[str, MemberInfo]:
        data, where = self._data, self.path
        magic, version, header_len, header_sha = _PREAMBLE.unpack_from(data, 0)
        if magic != MAGIC:
            raise ArtifactFormatError(
                f"{where!r} is not a .cuvilir file (bad magic {shorten(repr(magic), 40)})"
            )
        if version != FORMAT_VERSION:
            raise ArtifactVersionError(
                f"{where!r} has container format version {version}; this cuvil-ref reads "
                f"version {FORMAT_VERSION} (re-save the model with a matching cuvil-ref)"
            )
        start = _PREAMBLE.size
        if header_len > self.size - start:
            raise ArtifactFormatError(f"{where!r} is truncated (header runs past the end)")
        header = data[start : start + header_len]
        if hashlib.sha256(header).digest() != header_sha:
            raise ArtifactIntegrityError(f"{where!r}: the header digest does not match")
        infos = _member_infos(load_json(header, f"{where!r}: the container header"), where)
        cursor = start + header_len
        result: dict[str, MemberInfo] = {}
        for info in infos:
            name = shorten(repr(info.name))
            if info.offset < cursor or info.offset % ALIGN:
                raise ArtifactFormatError(f"{where!r}: member {name} is misplaced")
            if info.offset + info.size > self.size:
                raise ArtifactFormatError(
                    f"{where!r} is truncated: member {name} needs "
                    f"{info.offset + info.size} bytes, the file has {self.size}"
                )
            if any(data[cursor : info.offset]):
                raise ArtifactIntegrityError(f"{where!r}: non-zero padding before {name}")
            digest = hashlib.sha256(data[info.offset : info.offset + info.size]).hexdigest()
            if digest != info.sha256:
                raise ArtifactIntegrityError(
                    f"{where!r}: member {name} was modified (sha256 mismatch)"
                )
            if info.name in result:
                raise ArtifactFormatError(f"{where!r}: member {name} appears twice")
            result[info.name] = info
            cursor = info.offset + info.size
        if cursor != self.size:
            raise ArtifactIntegrityError(
                f"{where!r}: {self.size - cursor} unexpected trailing bytes"
            )
        return result

    def read(self, name: str) -> memoryview:
        """A read-only view of member ``name`` (no copy)."""
        try:
            info = self.members[name]
        except KeyError:
            raise ArtifactFormatError(
                f"{self.path!r} has no member {name!r} "
                f"(members: {shorten(str(sorted(self.members)), 200)})"
            ) from None
        return memoryview(self._data)[info.offset : info.offset + info.size]

    def offset_of(self, name: str) -> int:
        return self.members[name].offset

    def close(self) -> None:
        """Drop this container's reference to the bytes (views handed out keep them alive)."""
        self._data = b""

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _member_infos(header: object, where: str) -> list[MemberInfo]:
    what = f"{where!r}: the container header"
    entries = field(header, "members", "list", what)
    infos = []
    for i, entry in enumerate(entries):
        at = f"{what}: member #{i}"
        digest = field(entry, "sha256", "str", at)
        if len(digest) != 64:
            raise ArtifactFormatError(f"{at}: field 'sha256' is not a 64-digit hex digest")
        infos.append(
            MemberInfo(
                field(entry, "name", "str", at),
                field(entry, "offset", "int", at),
                field(entry, "size", "int", at),
                digest,
            )
        )
    return infos
