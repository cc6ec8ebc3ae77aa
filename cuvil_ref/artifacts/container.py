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
member — so a flipped bit anywhere in the file is refused. Members are returned as read-only
memory maps; nothing is ever unpickled or executed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuvil_ref.errors import ArtifactFormatError, ArtifactIntegrityError, ArtifactVersionError

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
    """A verified, memory-mapped container. Use as a context manager or call ``close``."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        p = Path(self.path)
        if not p.exists():
            raise ArtifactFormatError(f"artifact file {self.path!r} does not exist")
        if p.is_dir():
            raise ArtifactFormatError(f"{self.path!r} is a directory, not an artifact")
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _PREAMBLE.size:
                raise ArtifactFormatError(
                    f"{self.path!r} is truncated or not a .cuvilir file ({size} bytes)"
                )
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.size = size
        try:
            self.members = self._verify()
        except Exception:
            self._mm.close()
            raise

    def _verify(self) -> dict[str, MemberInfo]:
        mm, where = self._mm, self.path
        magic, version, header_len, header_sha = _PREAMBLE.unpack_from(mm, 0)
        if magic != MAGIC:
            raise ArtifactFormatError(f"{where!r} is not a .cuvilir file (bad magic {magic!r})")
        if version != FORMAT_VERSION:
            raise ArtifactVersionError(
                f"{where!r} has container format version {version}; this cuvil-ref reads "
                f"version {FORMAT_VERSION} (re-save the model with a matching cuvil-ref)"
            )
        start = _PREAMBLE.size
        if header_len > self.size - start:
            raise ArtifactFormatError(f"{where!r} is truncated (header runs past the end)")
        header = bytes(mm[start : start + header_len])
        if hashlib.sha256(header).digest() != header_sha:
            raise ArtifactIntegrityError(f"{where!r}: the header digest does not match")
        try:
            entries = json.loads(header)["members"]
            infos = [
                MemberInfo(str(e["name"]), int(e["offset"]), int(e["size"]), str(e["sha256"]))
                for e in entries
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise ArtifactFormatError(f"{where!r}: malformed header: {exc}") from None
        cursor = start + header_len
        result: dict[str, MemberInfo] = {}
        for info in infos:
            if info.offset < cursor or info.offset % ALIGN or info.size < 0:
                raise ArtifactFormatError(f"{where!r}: member {info.name!r} is misplaced")
            if info.offset + info.size > self.size:
                raise ArtifactFormatError(
                    f"{where!r} is truncated: member {info.name!r} needs "
                    f"{info.offset + info.size} bytes, the file has {self.size}"
                )
            if any(mm[cursor : info.offset]):
                raise ArtifactIntegrityError(f"{where!r}: non-zero padding before {info.name!r}")
            digest = hashlib.sha256(mm[info.offset : info.offset + info.size]).hexdigest()
            if digest != info.sha256:
                raise ArtifactIntegrityError(
                    f"{where!r}: member {info.name!r} was modified (sha256 mismatch)"
                )
            if info.name in result:
                raise ArtifactFormatError(f"{where!r}: member {info.name!r} appears twice")
            result[info.name] = info
            cursor = info.offset + info.size
        if cursor != self.size:
            raise ArtifactIntegrityError(
                f"{where!r}: {self.size - cursor} unexpected trailing bytes"
            )
        return result

    def read(self, name: str) -> memoryview:
        """A read-only view of member ``name`` (zero-copy)."""
        try:
            info = self.members[name]
        except KeyError:
            raise ArtifactFormatError(
                f"{self.path!r} has no member {name!r} (members: {sorted(self.members)})"
            ) from None
        return memoryview(self._mm)[info.offset : info.offset + info.size]

    def offset_of(self, name: str) -> int:
        return self.members[name].offset

    def close(self) -> None:
        # arrays may still map the file; the map then closes when they are freed
        with contextlib.suppress(BufferError):
            self._mm.close()

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
