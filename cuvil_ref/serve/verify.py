"""The checks a model version passes before it is compiled: what hot reload trusts.

In order, each failure a :class:`VersionRejected` with a short ``reason`` (the metric label)
and a message naming the file:

``missing``        the version folder has no ``model.cuvilir``;
``format``         not a cuvilir, or written in an artifact format this cuvil-ref does not read;
``compatibility``  written by a cuvil-ref of another major version, or for a target that is not
                   installed here, not available, or whose pack speaks another plugin API;
``signature``      with trusted keys configured: unsigned, or signed by none of them;
``digest``         a member (IR text, weights) does not match the digest the signature covers;
``golden``         the rollout policy requires a golden request and the folder has none, or
                   ``golden.json`` is malformed.

Compiling (``compile``) and the golden request itself (``golden``) come after, in the loader.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuvil_ref.errors import ArtifactError, ArtifactIntegrityError, CuvilError
from cuvil_ref.ir.graph import Module
from cuvil_ref.serve.errors import ConfigError
from cuvil_ref.serve.golden import Golden, read_golden

REASONS = ("missing", "format", "compatibility", "signature", "digest", "golden", "compile")


class VersionRejected(ConfigError):
    """A version that failed a check; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, path: object, reason: str, message: str) -> None:
        super().__init__(path, None, message)
        self.reason = reason


@dataclass(frozen=True)
class Verified:
    """A version that passed the checks: its module, meta, signer and golden request."""

    module: Module
    meta: dict[str, Any]
    meta_sha256: str  # identity of the version's content (meta.json holds every member's digest)
    signer: str | None  # hex public key that verified the signature (None: no keys configured)
    golden: Golden | None


def _major(version: Any) -> str | None:
    return version.split(".")[0] if isinstance(version, str) and version else None


def check_compatibility(path: Path, meta: dict[str, Any], target: Any = None) -> None:
    """Same cuvil-ref major version; the target (``target``, else the one the artifact records)
    installed, available, and from a pack speaking this host's plugin API (the host registers no
    target of an incompatible pack)."""
    from cuvil_ref import __version__
    from cuvil_ref.plugin.host import get_host

    theirs = meta.get("cuvil_version")
    if _major(theirs) != _major(__version__):
        raise VersionRejected(
            path,
            "compatibility",
            f"was written by cuvil-ref {theirs}; this server runs {__version__} (major versions "
            "must match: re-compile the model with this cuvil-ref)",
        )
    target = target if target is not None else meta.get("target")
    if target is None:
        return
    host = get_host()
    try:
        spec = host.resolve(target)
    except CuvilError as exc:
        raise VersionRejected(
            path, "compatibility", f"records a target this server cannot use: {exc}"
        ) from None
    avail = host.availability(spec)
    if not avail.available:
        raise VersionRejected(
            path,
            "compatibility",
            f"was compiled for target '{spec.name}', which is not available here: "
            f"{avail.reason or 'no device'}",
        )


def verify_version(
    path: Path,
    trusted_keys: Sequence[Any] | None = None,
    *,
    target: Any = None,
    require_golden: bool = False,
) -> Verified:
    """Check the artifact at ``path`` (a version folder's ``model.cuvilir``) and load it."""
    from cuvil_ref.artifacts import Container, load_module
    from cuvil_ref.artifacts.module_io import read_meta
    from cuvil_ref.artifacts.signing import verify_container

    if not path.is_file():
        raise VersionRejected(path, "missing", "is missing; each version folder holds one")
    signer = None
    try:
        with Container(path) as c:
            meta = read_meta(c)
            meta_bytes = bytes(c.read("meta.json"))
            check_compatibility(path, meta, target)
            if trusted_keys:
                try:
                    verify_container(c, trusted_keys)
                except ArtifactIntegrityError as exc:
                    raise VersionRejected(path, "signature", f"refused: {exc}") from None
                signer = _signer(c)
    except VersionRejected:
        raise
    except ArtifactIntegrityError as exc:
        raise VersionRejected(path, "digest", f"refused: {exc}") from None
    except (ArtifactError, OSError) as exc:
        raise VersionRejected(path, "format", f"cannot be read: {exc}") from None
    try:
        # Verified again on the bytes actually loaded: a file swapped after the checks above
        # is refused here rather than loaded unverified.
        module = load_module(path, trusted_keys=list(trusted_keys) if trusted_keys else None)
    except ArtifactIntegrityError as exc:
        raise VersionRejected(path, "digest", f"refused: {exc}") from None
    except CuvilError as exc:
        raise VersionRejected(path, "format", f"cannot be loaded: {exc}") from None
    try:
        golden = read_golden(path.parent)
    except ConfigError as exc:
        raise VersionRejected(path.parent, "golden", str(exc)) from None
    if golden is None and require_golden:
        raise VersionRejected(
            path.parent,
            "golden",
            "has no golden.json, and the rollout policy requires one (record it with "
            "add_model(..., golden=inputs) or cuvil add-model --golden-input x.npy)",
        )
    return Verified(module, meta, hashlib.sha256(meta_bytes).hexdigest(), signer, golden)


def _signer(container: Any) -> str | None:
    import json

    try:
        info = json.loads(bytes(container.read("signature.json")))
        key = info.get("public_key")
        return key if isinstance(key, str) else None
    except (KeyError, ValueError, AttributeError):
        return None


def load_trusted_keys(paths: Sequence[str | Path]) -> list[Any]:
    """Public keys from PEM files (``--trusted-key``); errors name the file."""
    from cuvil_ref.artifacts.signing import load_public_key

    return [load_public_key(Path(p)) for p in paths]
